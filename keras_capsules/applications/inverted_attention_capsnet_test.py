"""InvertedAttentionCapsNet: shapes, options and error paths (the registry test covers counts, saving and export)."""

import keras
import numpy as np
import pytest

from keras_capsules.applications import InvertedAttentionCapsNet
from keras_capsules.layers import ConcurrentRouting
from keras_capsules.testing import assert_finite, assert_parameter_counts

X = np.random.default_rng(0).normal(size=(2, 32, 32, 3)).astype("float32")


def test_cifar10_simple_structure_head_and_schedules():
    model = InvertedAttentionCapsNet(variant="cifar10-simple")
    assert_parameter_counts(model, 561_297, 561_297)
    stack = model.get_layer("capsules")
    assert isinstance(stack, ConcurrentRouting) and stack.iterations == 2 and not stack.sequential
    assert [tuple(l.vote_transform.kernel.shape) for l in stack.capsule_layers] == [
        (288, 32, 4, 4),
        (288, 32, 4, 4),
        (800, 10, 4, 4),
    ]
    # apple's init: N(0, 1) * sqrt(N_out / (sqrt(d) * N_in)), N_in counting K*K children per type
    std = float(np.std(keras.ops.convert_to_numpy(stack.capsule_layers[2].vote_transform.kernel)))
    assert abs(std - np.sqrt(10 / (4 * 800))) < 0.1 * np.sqrt(10 / (4 * 800))
    logits = keras.ops.convert_to_numpy(model(X))
    assert logits.shape == (2, 10)
    # the head is one Linear(d -> 1) shared by the class capsules
    poses, _ = keras.Model(model.inputs[0], stack.output)(X)
    w, b = model.get_layer("logits").get_weights()
    np.testing.assert_allclose(logits, keras.ops.convert_to_numpy(poses) @ w[:, 0] + b[0], rtol=1e-4, atol=1e-5)
    # with routing_iterations=2 the sequential schedule (ablation B) gives other outputs from the same weights
    sequential = InvertedAttentionCapsNet(variant="cifar10-simple", sequential_routing=True)
    sequential.set_weights(model.get_weights())
    assert not np.allclose(keras.ops.convert_to_numpy(sequential(X)), logits, atol=1e-5)


def test_cifar100_without_top_and_softmax_top():
    features = InvertedAttentionCapsNet(include_top=False, variant="cifar100-simple")
    assert tuple(features.output.shape) == (None, 20 * 36)
    grid = InvertedAttentionCapsNet(include_top=False, variant="cifar10-simple", input_shape=(20, 20, 3), pooling="avg")
    assert tuple(grid.output.shape) == (None, 32 * 16)
    probabilities = keras.ops.convert_to_numpy(grid(np.ones((1, 20, 20, 3), "float32")))
    assert_finite(probabilities)


def test_sequential_routing_with_another_router():
    model = InvertedAttentionCapsNet(
        variant="cifar10-simple",
        router={"name": "dynamic", "use_bias": False},
        sequential_routing=True,
        classes=4,
        classifier_activation="softmax",
    )
    stack = model.get_layer("capsules")
    assert stack.iterations == 3 and all(
        l.router.iterations == 3 for l in stack.capsule_layers
    )  # dynamic routing's own
    scores = keras.ops.convert_to_numpy(model(X))
    assert scores.shape == (2, 4)
    np.testing.assert_allclose(scores.sum(-1), 1.0, rtol=1e-5)


def test_errors():
    with pytest.raises(ValueError, match=r"InvertedAttentionCapsNet.*variant.*cifar10-resnet"):
        InvertedAttentionCapsNet(variant="cifar10")
    with pytest.raises(ValueError, match=r"InvertedAttentionCapsNet.*input_shape.*3 channels"):
        InvertedAttentionCapsNet(include_top=False, input_shape=(32, 32, 1))
    with pytest.raises(ValueError, match=r"InvertedAttentionCapsNet.*input_shape.*\(32, 32\)"):
        InvertedAttentionCapsNet(input_shape=(28, 28, 3))
    # concurrent routing: only routers that take initial poses, listed by the registry
    with pytest.raises(
        ValueError,
        match=r"InvertedAttentionCapsNet: argument `router`.*initial_poses=True\): \['inverted_dot_product'\]\), received 'dynamic'.*sequential_routing=True",
    ):
        InvertedAttentionCapsNet(variant="cifar10-simple", router="dynamic")
    with pytest.raises(ValueError, match=r"InvertedAttentionCapsNet.*router.*'name'"):
        InvertedAttentionCapsNet(variant="cifar10-simple", router={"iterations": 2})


def test_the_papers_standardisation_is_inside_the_model():
    model = InvertedAttentionCapsNet(variant="cifar10-simple", include_top=False)
    standardized = keras.Model(model.inputs[0], model.get_layer("standardize").output)
    x = np.random.default_rng(3).uniform(size=(2, 32, 32, 3)).astype("float32")
    expected = (x - np.array([0.4914, 0.4822, 0.4465])) / np.array([0.2023, 0.1994, 0.2010])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(standardized(x)), expected, rtol=1e-5, atol=1e-5)
    # include_preprocessing=True: [0, 255] images, rescaled before the standardisation
    raw = InvertedAttentionCapsNet(variant="cifar10-simple", include_top=False, include_preprocessing=True)
    raw.set_weights(model.get_weights())
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(raw(x * 255.0)), keras.ops.convert_to_numpy(model(x)), rtol=1e-4, atol=1e-5
    )
