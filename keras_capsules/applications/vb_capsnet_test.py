"""VBCapsNet: parameter count, structure, options and errors (the registry test covers saving and export)."""

import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.applications import VBCapsNet
from keras_capsules.testing import assert_finite, assert_parameter_counts


def official_parameter_count(channels=2, a=64, b=8, c=16, d=16, classes=5, pose=16):
    """The authors' CapsuleNet (src/capsnet.py, --arch 64 8 16 16 5), counted from its layer shapes.

    Running ``sum(p.numel() for p in CapsuleNet(args).parameters())`` on the official code gives 68,714
    trainable parameters and 308 BatchNorm running statistics (running_mean and running_var).
    """
    conv1 = channels * a * 5 * 5 + 2 * a  # no bias; BatchNorm2d(a) scale and offset
    primary = a * b * (pose + 1) + 2 * b + 2 * b  # 1x1 conv to poses and activations; BN_p and BN_a (affine)
    caps1 = b * c * pose * 3 * 3 + 2 * c  # W_ij per kernel offset; beta_u, beta_a
    caps2 = c * d * pose * 3 * 3 + 2 * d
    class_caps = d * classes * pose + 2 * classes  # W_ij shared over positions
    running = 2 * a + 2 * b + 2 * b + 2 * (2 * c + 2 * d + 2 * classes)  # the routers' BN_v, BN_a: 2 per type each
    trainable = conv1 + primary + caps1 + caps2 + class_caps
    return trainable, trainable + running


def test_parameter_counts_are_the_official_codes():
    trainable, total = official_parameter_count()
    assert (trainable, total) == (68_714, 69_022)
    assert_parameter_counts(VBCapsNet(), trainable, total, source="the authors' CapsuleNet, counted in PyTorch")


def test_structure_and_scores():
    model = VBCapsNet()
    layers = [model.get_layer(n) for n in ("conv_caps1", "conv_caps2", "class_caps")]
    assert all(isinstance(layer.router, routing.VariationalBayesRouter) for layer in layers)
    assert all(layer.router.iterations == 3 and layer.router.batch_norm for layer in layers)
    # the code's conv routers normalise a child over every parent position and type it feeds: 14x14 -> 6x6 -> 4x4
    assert [layer.router.child_grid for layer in layers] == [(14, 14), (6, 6), None]
    assert [(layer.router.kernel_size, layer.router.strides) for layer in layers[:2]] == [(3, 2), (3, 1)]
    assert [tuple(layer.output[0].shape[1:3]) for layer in layers[:2]] == [(6, 6), (4, 4)]
    assert tuple(layers[2].vote_transform.kernel.shape) == (16, 5, 4, 4)
    assert layers[2].shared_weights == "positions" and layers[2].coordinate_addition
    x = np.random.default_rng(0).uniform(size=(2, 32, 32, 2)).astype("float32")
    scores = keras.ops.convert_to_numpy(model(x))
    assert scores.shape == (2, 5) and np.all((scores >= 0) & (scores <= 1))


def test_one_channel_other_router_and_options():
    model = VBCapsNet(
        input_shape=(17, 20, 1), classes=3, router="em", routing_iterations=2, coordinate_addition=False,
        classifier_activation="softmax", spatial_routing=False,
    )  # fmt: skip
    assert isinstance(model.get_layer("class_caps").router, routing.EMRouter)
    assert model.get_layer("conv_caps1").router.child_grid is None
    assert model.get_layer("conv_caps2").router.iterations == 2
    scores = keras.ops.convert_to_numpy(model(np.ones((1, 17, 20, 1), "float32")))
    np.testing.assert_allclose(scores.sum(-1), 1.0, rtol=1e-5)
    assert_finite(scores)


def test_without_top():
    assert tuple(VBCapsNet(include_top=False, pooling="avg").output.shape) == (None, 256)


def test_errors():
    with pytest.raises(ValueError, match=r"VBCapsNet.*router.*'nope'"):
        VBCapsNet(router="nope")
    with pytest.raises(ValueError, match=r"VBCapsNet.*input_shape.*>= 17"):
        VBCapsNet(input_shape=(16, 16, 2))
