"""The generic recipes (any application on a dataset no paper used) and their augmentation, against the values documented."""

import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import applications
from keras_capsules.datasets import get_augmentation
from keras_capsules.datasets.augment import shift_pixels
from keras_capsules.recipes.generic import HOME, STANDALONE, generic

#: (optimizer, learning rate, decay per epoch, loss, batch): the table of docs/applications (hand-written from the papers' recipes).
EXPECTED = {
    "EffCapsNet": ("adam", 5e-4, 0.97, "margin", 16),
    "CapsNet": ("adam", 1e-3, 0.96, "margin", 32),
    "FMCapsNet": ("adam", 1e-3, 0.96, "margin", 32),
    "MatrixCapsNet": ("adam", 3e-3, 0.96, "spread", 16),
    "ConsensusCapsNet": ("adam", 3e-3, 0.96, "crossentropy", 16),
    "InvertedAttentionCapsNet": ("adam", 1e-3, 0.96, "crossentropy", 32),
    "AgreementGLOM": ("adamw", 4.8e-4, 1.0, "crossentropy", 32),
    "BaselineCNN": ("adam", 5e-4, 0.93, "crossentropy", 16),
    "EffConvCapsNet": ("adam", 1e-3, 0.96, "margin", 32),
    "VBCapsNet": ("adam", 1e-3, 1.0, "crossentropy", 32),
    "HeinsenCapsNet": ("adam", 5e-4, 1.0, "log_odds_crossentropy", 20),
    "SRCapsNet": ("adam", 1e-3, 0.96, "crossentropy", 32),
}


def test_every_application_has_a_generic_recipe():
    constructors = {
        n
        for n in applications.__all__
        if n[:1].isupper() and callable(getattr(applications, n)) and not isinstance(getattr(applications, n), type)
    }
    assert constructors == set(HOME) | set(STANDALONE) == set(EXPECTED)


@pytest.mark.parametrize("model", sorted(EXPECTED))
def test_generic_recipe_values(model):
    recipe = generic(model, "my_folder", has_test=False)
    optimizer, rate, decay, loss, batch = EXPECTED[model]
    assert (recipe.optimizer, recipe.learning_rate, recipe.lr_decay, recipe.loss, recipe.batch_size) == (
        optimizer,
        rate,
        decay,
        loss,
        batch,
    )
    assert (
        recipe.epochs == 30
        and recipe.augmentation == "random_shift"
        and recipe.dataset == "my_folder"
        and recipe.eval_on == ()
    )
    assert "reconstruction" not in recipe.model_kwargs or recipe.model_kwargs["reconstruction"] is False
    assert (
        recipe.lr_decay_steps is None
        and recipe.source.startswith(f"generic recipe of {model}")
        and recipe.variant == "generic"
    )
    assert generic(model, "my_folder").eval_on == ("test",)


def test_unknown_model_is_refused():
    with pytest.raises(
        ValueError, match=r"recipes.generic: argument `model` expected one of .*'EffCapsNet'.*received 'ResNet50'"
    ):
        generic("ResNet50", "my_folder")


def test_random_shift_moves_the_image_by_at_most_a_fourteenth_of_its_side():
    assert [shift_pixels(28, 28), shift_pixels(64, 64), shift_pixels(128, 96), shift_pixels(10, 10)] == [2, 5, 7, 1]
    image = np.zeros((64, 48, 3), np.float32)
    image[30, 20] = (0.2, 0.5, 0.9)
    preset = get_augmentation("random_shift")
    moves = set()
    for draw in range(40):
        out = preset.train(tf.constant(image), tf.constant([draw, 7])).numpy()
        assert out.shape == image.shape
        (row,), (col,) = np.nonzero(out[..., 0])
        np.testing.assert_allclose(out[row, col], image[30, 20])
        moves.add((row - 30, col - 20))
    limit = shift_pixels(64, 48)  # 48 / 14 -> 3
    assert all(abs(dr) <= limit and abs(dc) <= limit for dr, dc in moves) and len(moves) > 10
