"""FcCaps: weights shared across positions and IBM's coordinate addition (docs/reference/routers.md#coordinate-addition)."""

import keras
import numpy as np
import pytest

from keras_capsules.layers import FcCaps
from keras_capsules.layers.fc_caps import coordinate_offsets
from keras_capsules.testing import run_layer_test


def to_np(x):
    return np.asarray(keras.ops.convert_to_numpy(x), dtype="float64")


GRID = np.random.default_rng(0).normal(size=(2, 3, 4, 2, 16)).astype("float32")  # H=3, W=4, 2 types, 4x4 poses
ACTS = np.random.default_rng(1).uniform(size=(2, 3, 4, 2)).astype("float32")


def test_offsets_are_ibms():
    offsets = coordinate_offsets(3, 4, 16)
    for h in range(3):
        for w in range(4):
            expected = np.zeros(16)
            expected[3] = (w + 0.5) / 4  # column centre -> row 0, column 3
            expected[7] = (h + 0.5) / 3  # row centre -> row 1, column 3
            np.testing.assert_allclose(offsets[h, w], expected)
    assert (
        coordinate_offsets(2, 2, 9)[1, 0, 2] == 0.25 and coordinate_offsets(2, 2, 9)[1, 0, 5] == 0.75
    )  # 3x3: elements 2, 5


def test_position_shared_votes_and_coordinate_addition_match_numpy():
    layer = FcCaps(5, router="em", transform="matrix", shared_weights="positions", coordinate_addition=True)
    layer((GRID, ACTS))
    kernel = to_np(layer.vote_transform.kernel)
    assert kernel.shape == (2, 5, 4, 4)  # (types, classes, 4, 4): IBM's class-capsule W
    votes, acts = layer.compute_votes((GRID, ACTS))
    m = GRID.astype("float64").reshape(2, 3, 4, 2, 4, 4)
    expected = np.einsum("bhwtxy,toyz->bhwtoxz", m, kernel).reshape(2, 3, 4, 2, 5, 16)
    expected += coordinate_offsets(3, 4, 16)[None, :, :, None, None, :]
    np.testing.assert_allclose(to_np(votes), expected.reshape(2, 24, 5, 16), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(to_np(acts), ACTS.reshape(2, 24))


def test_fully_shared_weights_with_coordinate_addition():
    plain = FcCaps(3, router="em", transform="matrix", shared_weights=True)
    added = FcCaps(3, router="em", transform="matrix", shared_weights=True, coordinate_addition=True)
    plain(GRID)
    added(GRID)
    added.set_weights(plain.get_weights())
    difference = to_np(added.compute_votes(GRID)[0]) - to_np(plain.compute_votes(GRID)[0])
    expected = np.broadcast_to(coordinate_offsets(3, 4, 16)[None, :, :, None, None], (2, 3, 4, 2, 3, 16))
    np.testing.assert_allclose(difference, expected.reshape(2, 24, 3, 16), atol=1e-5)


def test_layer_contract():
    grid = np.concatenate([GRID, GRID[:1]])
    acts = np.concatenate([ACTS, ACTS[:1]])
    init = {
        "num_capsules": 5,
        "router": {"name": "em", "iterations": 2},
        "transform": "matrix",
        "shared_weights": "positions",
        "coordinate_addition": True,
    }
    run_layer_test(FcCaps, init, (grid, acts), expected_output_shapes=[(3, 5, 16), (3, 5)])


def test_errors():
    with pytest.raises(ValueError, match=r"FcCaps.*shared_weights.*'positions'"):
        FcCaps(3, shared_weights="types")
    with pytest.raises(ValueError, match=r"FcCaps.*coordinate_addition.*shared_weights=True or 'positions'"):
        FcCaps(3, transform="matrix", coordinate_addition=True)
    with pytest.raises(ValueError, match=r"FcCaps.*coordinate_addition.*transform='matrix'"):
        FcCaps(3, 8, shared_weights=True, coordinate_addition=True)
    with pytest.raises(ValueError, match=r"FcCaps.*inputs.*rank 5.*capsule grid"):
        FcCaps(3, transform="matrix", shared_weights="positions")(np.zeros((2, 6, 16), "float32"))
    with pytest.raises(ValueError, match=r"FcCaps.*inputs.*rank 5"):
        FcCaps(3, transform="matrix", shared_weights=True, coordinate_addition=True)(np.zeros((2, 6, 16), "float32"))


def test_position_shared_vector_transform():
    layer = FcCaps(3, 6, router="dynamic", shared_weights="positions")
    poses, lengths = layer(GRID)
    assert tuple(layer.vote_transform.kernel.shape) == (2, 3, 16, 6)  # (types, parents, in_dim, out_dim)
    assert tuple(poses.shape) == (2, 3, 6) and tuple(lengths.shape) == (2, 3)
