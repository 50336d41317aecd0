"""The attacks' planned batch: the arithmetic by hand, the estimate's growth per image against the tensors a dense
network's gradient must keep, and ``batch_size=None`` through the attacks."""

import keras
import numpy as np
import pytest

from keras_capsules.evaluation import adversarial_accuracy, adversarial_examples, attack_memory

GB = 10**9


@pytest.mark.parametrize(
    "fixed, per_image, limit, largest, expected",
    [
        (1 * GB, 0.25 * GB, 10 * GB, 256, 20),  # (0.6 * 10 - 1) / 0.25
        (1 * GB, 0.25 * GB, 10 * GB, 12, 12),  # at most `largest`
        (1 * GB, 1e3, 10 * GB, 256, 256),
        (7 * GB, 0.25 * GB, 10 * GB, 256, 1),  # none fits: one image at a time
        (1 * GB, 0, 10 * GB, 64, 64),
    ],
)
def test_the_batch_is_the_largest_whose_line_fits_in_the_share_of_the_limit(fixed, per_image, limit, largest, expected):
    assert attack_memory.SHARE == 0.6
    assert attack_memory.batch_for(fixed, per_image, limit, largest) == expected


def test_another_backend_or_an_unknown_limit_gets_the_largest_batch(monkeypatch):
    from keras_capsules.training import memory_plan

    assert attack_memory.gradient_batch_size(None, None, (4, 4, 1), ((), "int32"), 1000) == 256
    assert attack_memory.gradient_batch_size(None, None, (4, 4, 1), ((), "int32"), 7) == 7
    if keras.backend.backend() == "tensorflow":
        monkeypatch.setattr(memory_plan, "available_bytes", lambda: None)
        assert attack_memory.gradient_batch_size(lambda x, y: x, None, (4, 4, 1), ((), "int32"), 1000) == 256


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="the estimate replays a traced TensorFlow graph")
def test_the_estimate_grows_per_image_by_the_hidden_activations_the_gradient_keeps():
    """A 64-pixel input, a sigmoid hidden layer of UNITS, 3 classes: the gradient with respect to the images keeps
    the hidden activations (UNITS floats an image) for the backward pass and writes UNITS-sized temporaries
    there (the sigmoid's derivative and the hidden layer's gradient), so an image adds between one and a few
    UNITS-sized float32 tensors, times the plan's LIVE_FACTOR. The weights (65 x UNITS floats) do not grow with it."""
    from keras_capsules.evaluation import adversarial
    from keras_capsules.training import memory_plan

    units = 50_000
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Flatten(),
            keras.layers.Dense(units, "sigmoid"),
            keras.layers.Dense(3, "softmax"),
        ]
    )
    loss = keras.losses.SparseCategoricalCrossentropy(reduction=None)
    _, graph_function = adversarial._loss_gradient("test", model, lambda t, s: loss(t, s), 1.0, None)
    small, large = (
        attack_memory.estimated_peak_bytes(graph_function, model, (8, 8, 1), ((), "int32"), b) for b in (4, 12)
    )
    per_image = (large - small) / 8
    activation = memory_plan.LIVE_FACTOR * 4 * units
    assert activation <= per_image <= 4 * activation
    weights = 4 * (64 * units + units + 3 * units + 3)
    assert small - 4 * per_image >= memory_plan.PROCESS_BASELINE_BYTES + weights


def _linear_model():
    rng = np.random.default_rng(0)
    model = keras.Sequential([keras.Input((2, 3, 1)), keras.layers.Flatten(), keras.layers.Dense(3, "softmax")])
    model.layers[-1].set_weights([rng.normal(size=(6, 3)).astype("float32"), np.zeros(3, "float32")])
    model.compile(loss="sparse_categorical_crossentropy")
    images = rng.uniform(size=(9, 2, 3, 1)).astype("float32")
    return model, images, np.arange(9) % 3


def test_a_planned_batch_is_recorded_and_gives_the_images_of_any_other_batch(monkeypatch):
    from keras_capsules.training import memory_plan

    model, x, y = _linear_model()
    planned = adversarial_examples(model, x, y, "pgd", 0.1, steps=2, seed=3)
    assert planned.batch_size == 9  # the 9 images at once: a linear model's gradient fits anywhere
    accuracy = adversarial_accuracy(model, x, y, "fgsm", epsilons=[0.1])
    assert accuracy.batch_size == 9 and "9 images per gradient call" in accuracy.to_text()
    if keras.backend.backend() == "tensorflow":  # no room at all: one image at a time, the same images
        monkeypatch.setattr(memory_plan, "available_bytes", lambda: 1)
        single = adversarial_examples(model, x, y, "pgd", 0.1, steps=2, seed=3)
        assert single.batch_size == 1
        np.testing.assert_array_equal(single.images, planned.images)
    explicit = adversarial_examples(model, x, y, "pgd", 0.1, steps=2, seed=3, batch_size=4)
    assert explicit.batch_size == 4
    np.testing.assert_array_equal(explicit.images, planned.images)
