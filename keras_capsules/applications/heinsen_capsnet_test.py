"""HeinsenCapsNet: parameter count, structure, options and errors (the registry test covers saving and export)."""

import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.applications import HeinsenCapsNet
from keras_capsules.applications.heinsen_capsnet import CoordinateChannels
from keras_capsules.testing import assert_finite, assert_parameter_counts


def official_parameter_count(channels=2, width=64, parts=64, classes=5, pose=16):
    """The official SmallNORBClassifier(n_objs=5, n_parts=64, d_chns=64), counted from its layer shapes.

    Running ``sum(p.numel() for p in SmallNORBClassifier(5, 64, 64).parameters())`` on the 2019 release of
    github.com/glassroom/heinsen_routing (models.py) gives 271,688 and 904 BatchNorm
    running statistics.
    """
    stem = 2 * (channels + 2) + (channels + 2) * width * 9 + width  # BatchNorm + 3x3 conv on images + coordinates
    stem += 5 * (2 * width + width * width * 9 + width)
    scores = 2 * width + width * parts + parts  # BatchNorm + 1x1 conv
    poses = 2 * width + width * parts * pose + parts * pose
    part_routing = 2 * pose * parts + 2 * parts  # W_j and B_j, beta_use_j and beta_ign_j (shared by every child)
    class_routing = parts * classes * (2 * pose + 2)  # W_ij, B_ij, beta_use_ij, beta_ign_ij
    running = 2 * ((channels + 2) + 5 * width + 2 * width)
    trainable = stem + scores + poses + part_routing + class_routing
    return trainable, trainable + running


def test_parameter_counts_are_the_official_codes():
    trainable, total = official_parameter_count()
    assert (trainable, total) == (271_688, 272_592)
    assert_parameter_counts(
        HeinsenCapsNet(input_shape=(29, 29, 2)), trainable, total, source="the official code, counted in PyTorch"
    )


def test_structure_and_scores():
    model = HeinsenCapsNet(input_shape=(40, 40, 2))
    parts, classes = model.get_layer("part_caps"), model.get_layer("class_caps")
    assert isinstance(parts.router, routing.HeinsenRouter) and parts.router.share_children
    assert isinstance(classes.router, routing.HeinsenRouter) and not classes.router.share_children
    assert parts.router.iterations == classes.router.iterations == 3
    assert tuple(parts.vote_transform.kernel.shape) == (64, 4, 4)
    assert tuple(classes.vote_transform.kernel.shape) == (64, 5, 4, 4)
    assert tuple(model.get_layer("part_poses_split").output.shape[1:]) == (2, 2, 64, 16)  # 40 -> 38, 18, 16, 7, 5, 2
    x = np.random.default_rng(0).uniform(size=(2, 40, 40, 2)).astype("float32")
    scores = keras.ops.convert_to_numpy(model(x))
    assert scores.shape == (2, 5) and np.all((scores >= 0) & (scores <= 1))


def test_coordinate_channels_are_the_codes_grid():
    images = np.zeros((2, 3, 5, 1), "float32")
    out = keras.ops.convert_to_numpy(CoordinateChannels()(images))
    assert out.shape == (2, 3, 5, 3)
    np.testing.assert_allclose(out[1, :, 0, 1], [-1.0, 0.0, 1.0])  # rows
    np.testing.assert_allclose(out[1, 0, :, 2], [-1.0, -0.5, 0.0, 0.5, 1.0])  # columns


def test_one_channel_other_router_and_without_top():
    model = HeinsenCapsNet(input_shape=(29, 31, 1), classes=3, router="em", routing_iterations=2)
    assert isinstance(model.get_layer("class_caps").router, routing.EMRouter)
    assert model.get_layer("part_caps").router.iterations == 2
    assert_finite(keras.ops.convert_to_numpy(model(np.ones((1, 29, 31, 1), "float32"))))
    assert tuple(HeinsenCapsNet(input_shape=(29, 29, 2), include_top=False).output.shape) == (None, 64 * 16)


def test_errors():
    with pytest.raises(ValueError, match=r"HeinsenCapsNet.*router.*'nope'"):
        HeinsenCapsNet(router="nope")
    with pytest.raises(ValueError, match=r"HeinsenCapsNet.*input_shape.*>= 29"):
        HeinsenCapsNet(input_shape=(28, 28, 2))
