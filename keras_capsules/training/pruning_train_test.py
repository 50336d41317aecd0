"""REM pruning inside `train()`: held-out validation images, LOBSTER-wrapped optimizer from the start, resume with its state."""

import keras
import numpy as np
import pytest

from keras_capsules import recipes
from keras_capsules.saving import load_model
from keras_capsules.testing.tiers import large
from keras_capsules.training import train
from keras_capsules.training.pruning import LobsterOptimizer, prunable_weights

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="LOBSTER acts inside the compiled TensorFlow step"
)


def test_rem_recipes_prune_with_reference_settings():
    recipe = recipes.get("EffCapsNet", "mnist", "rem")
    assert recipe.pruning == {"validation_examples": 5500, "strength": 1e-4, "decay": 0.99}
    with pytest.raises(ValueError, match=r"field `pruning` expected None or a dict with keys from"):
        recipe.replace(pruning={"bogus": 1})


@large
def test_pruned_training_resumes_with_the_wrapped_optimizer(tmp_path):
    options = dict(
        model="EffCapsNet",
        dataset="mnist_sample",
        limit=96,
        eval_limit=64,
        batch_size=32,
        output=str(tmp_path / "run"),
        verbose=0,
        export=False,
        reconstruction=False,
        pruning={"validation_examples": 64, "max_search_steps": 3},
    )
    first = train(epochs=1, **options)
    assert first["steps_per_epoch"] == 3 and first["optimizer_iterations"] == 3  # 96 of the first 8,000 - 64 images
    assert first["sparsity"] > 0.0
    second = train(epochs=2, **options)
    assert (
        second["resumed_from_epoch"] == 1
        and second["optimizer_iterations_at_start"] == 3
        and second["optimizer_iterations"] == 6
    )
    model = load_model(str(tmp_path / "run" / "model.keras"), compile=False)
    zeros = sum(int(np.sum(np.asarray(v) == 0)) for v in prunable_weights(model))
    total = sum(int(np.prod(v.shape)) for v in prunable_weights(model))
    assert zeros / total == pytest.approx(second["sparsity"], abs=1e-9)
    assert second["sparsity"] >= first["sparsity"]  # zeros stay zero across the resume


def test_lobster_wrapper_is_the_compiled_optimizer(tmp_path):
    from keras_capsules.training.train import construct_model, stage_model

    recipe = recipes.get("EffCapsNet", "mnist", "rem")
    model = construct_model(recipe, 10, (28, 28, 1))
    plan = recipe.stage_recipes()
    trained = stage_model(model, plan[0][0], plan[0][1], steps_per_epoch=10)
    assert isinstance(trained.optimizer, LobsterOptimizer)
    assert float(np.asarray(trained.optimizer.strength)) == pytest.approx(1e-4)


@large
def test_pruning_validation_images_take_the_evaluation_transform(tmp_path):
    # glom_mnist pads 28 x 28 to 32 x 32 for training and evaluation alike, so the model is built for
    # 32 x 32: held-out images left at 28 x 28 could not be evaluated by the threshold search.
    metrics = train(
        model="CapsNet",
        dataset="mnist_sample",
        epochs=1,
        limit=64,
        eval_limit=32,
        batch_size=32,
        output=str(tmp_path / "run"),
        verbose=0,
        export=False,
        augmentation="glom_mnist",
        pruning={"validation_examples": 32, "max_search_steps": 2},
    )
    assert metrics["steps_per_epoch"] == 2 and np.isfinite(metrics["history"]["loss"][0])
    model = load_model(str(tmp_path / "run" / "model.keras"), compile=False)
    assert tuple(model.inputs[0].shape[1:]) == (32, 32, 1)
