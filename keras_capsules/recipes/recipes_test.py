"""Recipes: registry, overrides, learning-rate schedules against hand-computed values, and that each recipe trains."""

import dataclasses

import keras
import numpy as np
import pytest

from keras_capsules import applications, datasets, losses, recipes
from keras_capsules.recipes import Recipe
from keras_capsules.testing.tiers import large


def _lr(optimizer, step):
    rate = optimizer._learning_rate
    return float(rate(step)) if callable(rate) else float(rate)


def test_registry_and_overrides():
    recipe = recipes.get("EffCapsNet", "mnist")
    assert (recipe.optimizer, recipe.learning_rate, recipe.batch_size, recipe.epochs) == ("adam", 5e-4, 16, 150)
    changed = recipe.replace(epochs=3, batch_size=None, augmentation="mnist_shift2")
    assert changed.epochs == 3 and changed.batch_size == 16 and changed.augmentation == "mnist_shift2"
    with pytest.raises(ValueError, match=r"Recipe\.replace: unknown fields \['epoch'\]"):
        recipe.replace(epoch=3)
    with pytest.raises(
        ValueError, match=r"recipes\.get: no recipe for model 'EffCapsNet' on dataset 'cifar10'.*registered"
    ):
        recipes.get("EffCapsNet", "cifar10")
    with pytest.raises(ValueError, match=r"field `optimizer` expected one of"):
        Recipe("EffCapsNet", "mnist", optimizer="rmsprop")
    with pytest.raises(ValueError, match=r"already registered"):
        recipes.register_recipe(recipe)
    assert ("MatrixCapsNet", "smallnorb", "novel_azimuth") in recipes.available("MatrixCapsNet")


def test_recipes_name_registered_configurations():
    recipe = recipes.get("EffCapsNet", "smallnorb")
    assert recipe.configuration == "EffCapsNet/smallnorb-reconstruction"
    assert recipe.model_kwargs == {"variant": "smallnorb", "reconstruction": True}
    affnist = recipes.get("FMCapsNet", "expanded_mnist")  # the recipe's own arguments go on top of the configuration's
    assert affnist.model_kwargs == {
        "variant": "affnist",
        "reconstruction": True,
        "router": {"name": "fm_agreement", "activation": "squash", "scale": "code"},
    }
    assert Recipe(
        "CapsNet", "mnist", configuration="CapsNet/mnist", model_kwargs={"routing_iterations": 2}
    ).model_kwargs == {"routing_iterations": 2}
    with pytest.raises(ValueError, match=r"get_configuration.*'CapsNet/cifar'"):
        Recipe("CapsNet", "mnist", configuration="CapsNet/cifar")
    with pytest.raises(
        ValueError, match=r"Recipe\('CapsNet', 'mnist'\): field `configuration` expected a configuration of CapsNet"
    ):
        Recipe("CapsNet", "mnist", configuration="EffCapsNet/mnist")
    for key in recipes.available():
        recipe = recipes.get(*key)
        if recipe.configuration is not None:
            entry = applications.get_configuration(recipe.configuration)
            assert entry.constructor.__name__ == recipe.model and entry.kwargs.items() <= recipe.model_kwargs.items(), (
                key
            )


def test_every_recipe_names_existing_data_presets_and_losses():
    for key in recipes.available():
        recipe = recipes.get(*key)
        info = datasets.info(recipe.dataset)
        assert recipe.train_split in info.splits, key
        for dataset, split in recipe.evaluations():  # "affnist|affine_mnist": either set must have the split
            assert all(split in datasets.info(name).splits for name in dataset.split("|")), key
        if recipe.augmentation:
            datasets.get_augmentation(recipe.augmentation)
        assert isinstance(recipe.make_loss(), keras.losses.Loss), key
        assert recipe.source, key
        recipe.make_optimizer(steps_per_epoch=10)


def test_schedules_match_hand_computed_values():
    # Efficient-CapsNet: 5e-4 * 0.97**epoch, floored at 5e-5 (reached at epoch 76).
    eff = recipes.get("EffCapsNet", "mnist").make_optimizer(steps_per_epoch=10)
    for epoch in (0, 1, 5, 75, 76, 149):
        assert _lr(eff, epoch * 10 + 3) == pytest.approx(max(5e-4 * 0.97**epoch, 5e-5), rel=1e-5)
    # Sabour: 1e-3 * 0.96**(step / 2000), continuous.
    sabour = recipes.get("CapsNet", "mnist").make_optimizer(steps_per_epoch=469)
    assert _lr(sabour, 3000) == pytest.approx(1e-3 * 0.96**1.5, rel=1e-5)
    # IDPA: SGD 0.1, x0.1 after epochs 150 and 250.
    idpa = recipes.get("InvertedAttentionCapsNet", "cifar10").make_optimizer(steps_per_epoch=391)
    assert isinstance(idpa, keras.optimizers.SGD) and idpa.momentum == 0.9 and idpa.weight_decay == 5e-4
    for epoch, expected in ((0, 0.1), (149, 0.1), (150, 0.01), (249, 0.01), (250, 0.001)):
        assert _lr(idpa, epoch * 391) == pytest.approx(expected, rel=1e-6)
    # REM: 1e-3 * 0.99**epoch (staircase per epoch).
    rem = recipes.get("CapsNet", "mnist", "rem").make_optimizer(steps_per_epoch=50)
    assert _lr(rem, 149) == pytest.approx(1e-3 * 0.99**2, rel=1e-6)
    # One-cycle: from max/25 up to max at 30% of the steps, down to max/2.5e5.
    onecycle = Recipe("EffCapsNet", "mnist", learning_rate=0.012, lr_schedule="onecycle", epochs=10).make_optimizer(
        steps_per_epoch=100
    )
    assert _lr(onecycle, 0) == pytest.approx(0.012 / 25, rel=1e-4)
    assert _lr(onecycle, 300) == pytest.approx(0.012, rel=1e-4)
    assert _lr(onecycle, 1000) == pytest.approx(0.012 / 25 / 1e4, rel=1e-2)
    assert recipes.get("EffCapsNet", "mnist").make_schedule() == 5e-4  # no epoch length: the initial rate
    with pytest.raises(ValueError, match=r"make_schedule.*steps_per_epoch.*0"):
        recipes.get("EffCapsNet", "mnist").make_optimizer(steps_per_epoch=0)


def test_numpy_integers_are_accepted_and_stored_as_python_ints():
    import json

    recipe = Recipe("EffCapsNet", "mnist", batch_size=np.int64(8), epochs=np.uint8(3))
    assert (type(recipe.batch_size), type(recipe.epochs)) == (int, int) and (recipe.batch_size, recipe.epochs) == (8, 3)
    schedule = Recipe("CapsNet", "mnist", lr_schedule="exponential", lr_decay=0.9).make_schedule(
        steps_per_epoch=np.int32(10)
    )
    assert json.loads(json.dumps(keras.optimizers.schedules.serialize(schedule)))["config"]["decay_steps"] == 10
    assert float(schedule(25)) == pytest.approx(
        Recipe("CapsNet", "mnist").learning_rate * 0.9**2, rel=1e-6
    )  # staircase: epoch 2
    for bad in (True, 8.0):
        with pytest.raises(ValueError, match=r"field `batch_size` expected a positive integer"):
            Recipe("EffCapsNet", "mnist", batch_size=bad)


def test_losses_and_callbacks():
    matrix = recipes.get("MatrixCapsNet", "smallnorb")
    loss = matrix.make_loss()
    assert isinstance(loss, losses.SpreadLoss)
    (scheduler,) = matrix.make_callbacks(loss)
    assert isinstance(scheduler, losses.SpreadMarginScheduler) and scheduler.schedule == "ibm"
    ce = recipes.get("InvertedAttentionCapsNet", "cifar10").make_loss()
    assert isinstance(ce, keras.losses.SparseCategoricalCrossentropy) and ce.from_logits
    custom = Recipe("EffCapsNet", "mnist", loss="MarginLoss", loss_kwargs={"m_plus": 0.8}).make_loss()
    assert custom.m_plus == 0.8
    with pytest.raises(ValueError, match=r"field `loss` expected one of"):
        Recipe("EffCapsNet", "mnist", loss="nope").make_loss()
    (top2,) = recipes.get("CapsNet", "multi_mnist").make_metrics()
    assert isinstance(top2, keras.metrics.Precision) and top2.top_k == 2


def _train_input(recipe):
    """One augmented batch shape of the recipe's data, computed from the preset on a dummy image."""
    import tensorflow as tf

    info = datasets.info(recipe.dataset)
    shape = info.image_shape
    if recipe.dataset_options.get("pad") is not None:
        side = 28 + 2 * recipe.dataset_options["pad"]
        shape = (side, side, 1)
    if recipe.augmentation:
        preset = datasets.get_augmentation(recipe.augmentation)
        shape = tuple(preset.train(tf.zeros(shape), tf.constant([0, 0], tf.int64)).shape)
    return shape, info


@large
def test_each_distinct_recipe_model_builds_for_its_data():
    """Every (model, kwargs, input shape) of the recipes builds with its data's shape and classes and compiles.

    (Training steps of the applications are covered by the training tests; tracing every paper-sized
    model here would take minutes.)
    """
    seen = set()
    for key in recipes.available():
        recipe = recipes.get(*key)
        assert hasattr(applications, recipe.model), f"{key}: no application named {recipe.model!r}"
        shape, info = _train_input(recipe)
        signature = (recipe.model, repr(sorted(recipe.model_kwargs.items())), shape)
        if signature in seen:
            continue
        seen.add(signature)
        model = getattr(applications, recipe.model)(
            **{"classes": info.classes, "input_shape": shape, **recipe.model_kwargs}
        )
        assert tuple(model.inputs[0].shape[1:]) == shape, key
        scores = model.outputs[0]
        assert tuple(scores.shape) == (None, info.classes), key
        loss = recipe.make_loss()
        model.compile(optimizer=recipe.make_optimizer(steps_per_epoch=5), loss=loss, metrics=recipe.make_metrics())
        y = np.eye(info.classes, dtype="float32")[:2] if info.multi_label else np.array([0, 1])
        assert np.isfinite(float(loss(y, np.full((2, info.classes), 0.3, "float32")))), key
    assert {s[0] for s in seen} >= {"CapsNet", "EffCapsNet"}


def test_recipe_fields_round_trip_as_dict():
    recipe = recipes.get("EffCapsNet", "multi_mnist")
    assert Recipe(**dataclasses.asdict(recipe)) == recipe


def test_rem_dr_capsnet_recipes_route_as_rem():
    # REM's dynamic_routing: 3 iterations, routing bias initialised to 0.1, votes detached in all but the last.
    for dataset in ("mnist", "fashion_mnist", "cifar10", "expanded_mnist"):
        recipe = recipes.get("CapsNet", dataset, "rem")
        assert recipe.model_kwargs["router"] == {
            "name": "dynamic",
            "iterations": 3,
            "use_bias": True,
            "stop_gradient_inner": True,
        }
    assert recipes.get("CapsNet", "cifar10", "rem").augmentation == "cifar24_crop_flip"
