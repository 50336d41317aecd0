"""Keras Applications contract for CapsNet and EffCapsNet (keras/src/applications/applications_test.py style)."""

import keras
import numpy as np
import pytest

from keras_capsules import applications, losses
from keras_capsules.applications import CapsNet, CapsuleClassifier, EffCapsNet
from keras_capsules.testing.tiers import large


@pytest.mark.parametrize("constructor", [CapsNet, EffCapsNet])
def test_notop_pooling_and_input_tensor(constructor):
    model = constructor(include_top=False, pooling="avg")
    assert len(model.output.shape) == 2 and model.output.shape[0] is None
    tensor = keras.Input((28, 28, 1))
    model = constructor(input_tensor=tensor, classes=7)
    assert model.inputs[0] is tensor and tuple(model.output.shape) == (None, 7)


def test_capsnet_custom_shapes_and_activation():
    model = CapsNet(input_shape=(32, 32, 3), classes=4, classifier_activation="softmax")
    out = keras.ops.convert_to_numpy(model(np.random.rand(2, 32, 32, 3).astype("float32")))
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-5)
    assert CapsNet(include_top=False).output.shape[1:] == (6, 6, 256)


def test_router_is_swappable():
    model = EffCapsNet(router="dynamic", routing_iterations=2)
    caps = model.get_layer("class_caps")
    assert caps.router.router_name == "dynamic" and caps.router.iterations == 2


def test_argument_errors():
    with pytest.raises(ValueError, match=r"CapsNet.*weights.*imagenet"):
        CapsNet(weights="imagenet")
    with pytest.raises(ValueError, match=r"EffCapsNet.*pooling"):
        EffCapsNet(include_top=False, pooling="sum")
    with pytest.raises(ValueError, match=r"EffCapsNet.*variant"):
        EffCapsNet(variant="cifar")
    with pytest.raises(ValueError, match=r"CapsNet.*input_shape.*17"):
        CapsNet(input_shape=(12, 12, 1))
    with pytest.raises(ValueError, match=r"CapsNet.*classes"):
        CapsNet(classes=0)
    with pytest.raises(ValueError, match=r"CapsNet.*classifier_activation"):
        CapsNet(classifier_activation="nope")
    with pytest.raises(ValueError, match=r"input_shape.*fully defined"):
        CapsNet(input_shape=(None, None, 1))


@large
def test_reconstruction_model_trains_with_plain_fit_and_adds_the_masked_loss():
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(8, 28, 28, 1)).astype("float32")
    y = rng.integers(0, 10, 8)
    model = EffCapsNet(reconstruction=True)
    assert isinstance(model, CapsuleClassifier)
    model.compile(optimizer="adam", loss=losses.MarginLoss())
    scores, poses = model(x, training=True)
    scores, poses = keras.ops.convert_to_numpy(scores), keras.ops.convert_to_numpy(poses)
    # NumPy reference: the margin loss (0.9, 0.1, 0.5; summed over classes, mean over the batch) and
    # the paper's decoder (160 -> 512 ReLU -> 1024 ReLU -> 784 sigmoid) on the label-masked capsules.
    onehot = np.eye(10, dtype="float32")[y]
    margin = onehot * np.maximum(0.0, 0.9 - scores) ** 2 + 0.5 * (1 - onehot) * np.maximum(0.0, scores - 0.1) ** 2
    h = (poses * onehot[..., None]).reshape(8, 160)
    weights = [keras.ops.convert_to_numpy(w) for w in model.decoder.weights]
    assert [w.shape for w in weights] == [(160, 512), (512,), (512, 1024), (1024,), (1024, 784), (784,)]
    h = np.maximum(h @ weights[0] + weights[1], 0.0)
    h = np.maximum(h @ weights[2] + weights[3], 0.0)
    recon = (1.0 / (1.0 + np.exp(-(h @ weights[4] + weights[5])))).reshape(8, 28, 28, 1)
    expected = margin.sum(-1).mean() + 0.392 * np.mean((x - recon) ** 2)
    total = keras.ops.convert_to_numpy(model.compute_loss(x, y, (scores, poses), training=True))
    np.testing.assert_allclose(total, expected, rtol=1e-4)
    history = model.fit(x, y, epochs=2, batch_size=4, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert tuple(model.predict(x, verbose=0).shape) == (8, 10)
    assert tuple(model.reconstruct(x[:2]).shape) == (2, 28, 28, 1)


def test_decode_and_preprocess():
    preds = np.array([[0.1, 0.9, 0.3]])
    assert applications.decode_predictions(preds, top=2, class_names=["a", "b", "c"]) == [
        [(1, "b", 0.9), (2, "c", 0.3)]
    ]
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(applications.preprocess_input(np.array([255.0, 0.0]))), [1.0, 0.0]
    )
    with pytest.raises(ValueError, match="class_names"):
        applications.decode_predictions(preds, class_names=["a"])


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="SavedModel export is TensorFlow-only")
@large
def test_reconstruction_model_exports_straight_after_construction_and_after_loading(tmp_path):
    import tensorflow as tf

    model = EffCapsNet(reconstruction=True)
    model.export(str(tmp_path / "fresh"), verbose=False)
    model.save(str(tmp_path / "m.keras"))
    loaded = keras.saving.load_model(str(tmp_path / "m.keras"))
    loaded.export(str(tmp_path / "loaded"), verbose=False)
    x = np.random.default_rng(1).uniform(size=(2, 28, 28, 1)).astype("float32")
    reloaded = tf.saved_model.load(str(tmp_path / "loaded"))
    served = reloaded.serve(x).numpy()
    np.testing.assert_allclose(served, keras.ops.convert_to_numpy(model(x)), atol=1e-6)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(input_shape=(28, 28, 0)),
            r"EffCapsNet: argument `input_shape` expected a positive number of channels, received \(28, 28, 0\)",
        ),
        (
            dict(include_top=False, input_shape=(None, None, 1)),
            r"EffCapsNet: argument `input_shape` expected a fully defined shape \(known height and width",
        ),
    ],
)
def test_unusable_input_shapes_are_refused_up_front(kwargs, message):
    from keras_capsules.applications import EffCapsNet

    with pytest.raises(ValueError, match=message):
        EffCapsNet(**kwargs)
