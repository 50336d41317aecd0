"""BaselineCNN: both variants' parameter counts worked out by hand, the top against NumPy, the contract, saving and a fit step."""

import keras
import numpy as np
import pytest

from keras_capsules import applications
from keras_capsules.applications import BaselineCNN, CapsuleClassifier
from keras_capsules.testing import count_weights, random_images, run_application_test
from keras_capsules.testing.tiers import large

# Hand arithmetic, layer by layer: kernel (kh * kw * in * out) + bias; BatchNorm: gamma + beta trainable,
# moving mean + variance not.
MATCHED = {
    "conv1": 5 * 5 * 1 * 32,  # 800, no bias (BatchNorm's beta is the bias)
    "bn1": 2 * 32,
    "conv2": 3 * 3 * 32 * 64,  # 18,432
    "bn2": 2 * 64,
    "conv3": 3 * 3 * 64 * 64,  # 36,864
    "bn3": 2 * 64,
    "conv4": 3 * 3 * 64 * 128,  # 73,728
    "bn4": 2 * 128,
    "fc1": 128 * 226 + 226,  # 29,154 (global average pooling: 128 features)
    "logits": 226 * 10 + 10,  # 2,270
}
MATCHED_STATISTICS = 2 * (32 + 64 + 64 + 128)  # 576 moving means and variances
PAPER = {
    "conv1": 5 * 5 * 1 * 256 + 256,  # 6,656
    "conv2": 5 * 5 * 256 * 256 + 256,  # 1,638,656
    "conv3": 5 * 5 * 256 * 128 + 128,  # 819,328
    "fc1": 28 * 28 * 128 * 328 + 328,  # 32,915,784 ("same" padding, no pooling: 28x28x128 flattened)
    "fc2": 328 * 192 + 192,  # 63,168
    "logits": 192 * 10 + 10,  # 1,930
}


def _np(x):
    return keras.ops.convert_to_numpy(x)


@pytest.fixture(scope="module")
def matched():
    return BaselineCNN(variant="matched")


def test_matched_count_is_effcapsnets_by_hand_arithmetic(matched):
    assert sum(MATCHED.values()) == 161_824 == applications.get_configuration("EffCapsNet/mnist").trainable_params
    trainable = {layer.name: count_weights(layer.trainable_weights) for layer in matched.layers if layer.weights}
    assert trainable == MATCHED
    assert count_weights(matched.trainable_weights) == 161_824
    assert matched.count_params() == 161_824 + MATCHED_STATISTICS == 162_400  # EffCapsNet/mnist's total too
    assert applications.get_configuration("BaselineCNN/matched").trainable_params == sum(MATCHED.values())
    # Global pooling: the count does not depend on the image size (40x40 expanded_mnist).
    assert count_weights(BaselineCNN(variant="matched", input_shape=(40, 40, 1)).trainable_weights) == 161_824


def test_capsnet_paper_count_by_hand_arithmetic():
    model = BaselineCNN(variant="capsnet_paper")
    assert round(sum(PAPER.values()) / 1e6, 1) == 35.4  # the paper's "35.4M"
    trainable = {layer.name: count_weights(layer.trainable_weights) for layer in model.layers if layer.weights}
    assert trainable == PAPER
    assert count_weights(model.trainable_weights) == model.count_params() == sum(PAPER.values()) == 35_445_522
    assert model.get_layer("dropout").rate == 0.5
    assert tuple(model.get_layer("conv3").output.shape) == (None, 28, 28, 128)


def test_matched_top_against_numpy(matched):
    x = np.random.default_rng(0).uniform(size=(3, 28, 28, 1)).astype("float32")
    features = keras.Model(matched.inputs[0], matched.get_layer("relu4").output)
    f = _np(features(x)).astype("float64")
    assert f.shape == (3, 9, 9, 128) and f.min() >= 0.0  # 28 -> 24 -> 22 -> 20 -> 9 (stride 2), after ReLU
    w1, b1 = (_np(w) for w in matched.get_layer("fc1").weights)
    w2, b2 = (_np(w) for w in matched.get_layer("logits").weights)
    logits = np.maximum(f.mean(axis=(1, 2)) @ w1 + b1, 0.0) @ w2 + b2
    np.testing.assert_allclose(_np(matched(x)), logits, rtol=1e-4, atol=1e-5)  # classifier_activation=None: logits
    assert matched.get_layer("predictions").get_config()["activation"] == "linear"


def test_application_contract():
    features = BaselineCNN(include_top=False)
    assert isinstance(features, CapsuleClassifier) and tuple(features.output.shape) == (None, 9, 9, 128)
    assert "predictions" not in [layer.name for layer in features.layers]
    assert tuple(BaselineCNN(include_top=False, pooling="max").output.shape) == (None, 128)
    assert tuple(
        BaselineCNN(variant="capsnet_paper", include_top=False, input_shape=(8, 8, 1), pooling="avg").output.shape
    ) == (None, 128)
    tensor = keras.Input((32, 32, 3))
    model = BaselineCNN(input_tensor=tensor, classes=4, classifier_activation="softmax", weights=None)
    assert (
        model.inputs[0] is tensor and tuple(model.output.shape) == (None, 4) and model.output_names == ["predictions"]
    )
    probabilities = _np(model(np.random.default_rng(1).uniform(size=(2, 32, 32, 3)).astype("float32")))
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (
            dict(variant="vgg"),
            ValueError,
            r"BaselineCNN: argument `variant` expected one of \['capsnet_paper', 'matched'\], received 'vgg'",
        ),
        (
            dict(dropout=1.0),
            ValueError,
            r"BaselineCNN: argument `dropout` expected None or a number in \[0, 1\), received 1\.0",
        ),
        (dict(pooling="avg"), ValueError, r"BaselineCNN: argument `pooling` expected None with include_top=True"),
        (
            dict(input_shape=(10, 10, 1)),
            ValueError,
            r"BaselineCNN: argument `input_shape` expected height and width >= 11",
        ),
        (dict(weights="imagenet"), ValueError, r"BaselineCNN: argument `weights`"),
        (dict(router="dynamic"), TypeError, r"BaselineCNN\(\) got an unexpected keyword argument 'router'"),
    ],
)
def test_bad_arguments_name_the_constructor_and_argument(kwargs, error, message):
    with pytest.raises(error, match=message):
        BaselineCNN(**kwargs)


def test_capsnet_paper_variant_round_trips_and_loads_a_weights_file():
    """At 6x6 (35M parameters at 28x28): ``.keras`` bit for bit and ``weights=`` a file; the matched variant is the
    registry's BaselineCNN/matched (registry_test.py)."""
    kwargs = dict(variant="capsnet_paper", input_shape=(6, 6, 1), classes=3)
    run_application_test(BaselineCNN, kwargs, (3,), run_predict=False, run_training=False, run_weights_file=True)


@large
def test_one_fit_step_updates_every_weight_and_reports_the_crossentropy():
    loss = keras.losses.SparseCategoricalCrossentropy()
    kwargs = {"classifier_activation": "softmax"}
    model = run_application_test(BaselineCNN, kwargs, (10,), batch_size=8, loss=loss, run_saving=False)
    x, y = random_images(model, 8), np.arange(8) % 10  # the step's images and labels
    # Evaluate mode (BatchNorm statistics, no dropout): the loss is the mean of -log p(label) of predict.
    probabilities = model.predict(x, verbose=0).astype("float64")
    expected = -np.log(probabilities[np.arange(8), y]).mean()
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), expected, rtol=1e-4)
