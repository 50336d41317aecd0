"""The CNN baselines' recipes copy their capsule model's: fields, and learning rates against hand-computed values."""

import keras
import pytest

from keras_capsules import recipes


def _lr(optimizer, step):
    rate = optimizer._learning_rate
    return float(rate(step)) if callable(rate) else float(rate)


def test_matched_mnist_recipe_is_the_effcapsnet_mnist_presets_schedule():
    recipe = recipes.get("BaselineCNN", "mnist")
    eff = recipes.get("EffCapsNet", "mnist")
    assert recipe.model_kwargs == {"variant": "matched"}
    # The preset's command: --epochs 40 --lr-decay 0.93, then 5 epochs at the floor: 45 in all.
    assert (
        (recipe.augmentation, recipe.batch_size, recipe.optimizer, recipe.learning_rate, recipe.lr_floor)
        == (eff.augmentation, eff.batch_size, eff.optimizer, eff.learning_rate, eff.lr_floor)
        == ("effcapsnet_mnist", 16, "adam", 5e-4, 5e-5)
    )
    assert (recipe.lr_decay, recipe.epochs) == (0.93, 45)
    assert isinstance(recipe.make_loss(), keras.losses.SparseCategoricalCrossentropy)
    optimizer = recipe.make_optimizer(steps_per_epoch=10)
    # 5e-4 * 0.93**epoch, floored at 5e-5 from epoch 32 (0.93**31 = 0.1054, 0.93**32 = 0.0981).
    for epoch, expected in (
        (0, 5e-4),
        (1, 4.65e-4),
        (10, 5e-4 * 0.4839823),
        (31, 5e-4 * 0.1054317),
        (32, 5e-5),
        (44, 5e-5),
    ):
        assert _lr(optimizer, epoch * 10 + 3) == pytest.approx(expected, rel=1e-5)
    assert recipes.get("BaselineCNN", "mnist_sample") == recipe.replace(dataset="mnist_sample")


def test_expanded_mnist_recipe_is_fmcapsnets_affnist_recipe():
    recipe = recipes.get("BaselineCNN", "expanded_mnist")
    fm = recipes.get("FMCapsNet", "expanded_mnist")
    fields = (
        "optimizer",
        "learning_rate",
        "lr_decay",
        "batch_size",
        "epochs",
        "augmentation",
        "eval_on",
        "dataset_options",
    )
    assert [getattr(recipe, f) for f in fields] == [getattr(fm, f) for f in fields]
    assert recipe.eval_on == ("test", "affnist|affine_mnist:test") and recipe.model_kwargs == {"variant": "matched"}


def test_capsnet_paper_recipe_is_the_capsnet_recipe():
    recipe = recipes.get("BaselineCNN", "mnist", "capsnet_paper")
    capsnet = recipes.get("CapsNet", "mnist")
    fields = ("optimizer", "learning_rate", "lr_decay", "lr_decay_steps", "batch_size", "epochs", "augmentation")
    assert [getattr(recipe, f) for f in fields] == [getattr(capsnet, f) for f in fields]
    assert recipe.model_kwargs == {"variant": "capsnet_paper"}
    assert _lr(recipe.make_optimizer(steps_per_epoch=469), 3000) == pytest.approx(1e-3 * 0.96**1.5, rel=1e-5)
