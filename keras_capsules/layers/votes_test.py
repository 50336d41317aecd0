import keras
import numpy as np
import pytest

from keras_capsules.layers import MatrixVotes, VectorVotes
from keras_capsules.testing import run_layer_test
from keras_capsules.testing.gradients import input_gradient


def test_vector_votes_match_per_pair_products():
    rng = np.random.default_rng(0)
    u = rng.normal(size=(2, 5, 3)).astype("float32")
    layer = VectorVotes(4, 6)
    votes = keras.ops.convert_to_numpy(layer(u))
    w = keras.ops.convert_to_numpy(layer.kernel)
    assert w.shape == (5, 4, 3, 6)
    for i in range(5):
        for j in range(4):
            np.testing.assert_allclose(votes[:, i, j], u[:, i] @ w[i, j], rtol=1e-5, atol=1e-6)


def test_shared_vector_votes_use_one_matrix_per_parent():
    u = np.random.default_rng(1).normal(size=(2, 5, 3)).astype("float32")
    layer = VectorVotes(4, 6, shared=True)
    votes = keras.ops.convert_to_numpy(layer(u))
    w = keras.ops.convert_to_numpy(layer.kernel)
    assert w.shape == (4, 3, 6)
    np.testing.assert_allclose(votes[:, 2, 1], u[:, 2] @ w[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shared", [False, True])
def test_parent_major_vector_votes(shared):
    """``parent_major=True``: votes ``(batch, out, in, d)`` with ``votes[b, j, i] = u_i W_ij``."""
    u = np.random.default_rng(4).normal(size=(2, 5, 3)).astype("float32")
    layer = VectorVotes(4, 6, shared=shared)
    votes = keras.ops.convert_to_numpy(layer(u, parent_major=True))
    w = keras.ops.convert_to_numpy(layer.kernel)
    assert votes.shape == (2, 4, 5, 6)
    for i in range(5):
        for j in range(4):
            np.testing.assert_allclose(votes[:, j, i], u[:, i] @ (w[j] if shared else w[i, j]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("parent_major", [False, True])
@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("normalize", [False, True])
def test_matrix_votes(side, normalize, shared, parent_major):
    rng = np.random.default_rng(2)
    poses = rng.normal(size=(3, 4, 16)).astype("float32")
    layer = MatrixVotes(5, side=side, normalize=normalize, shared=shared)
    votes = keras.ops.convert_to_numpy(layer(poses, parent_major=parent_major))
    if parent_major:  # (batch, out, in, p*p): compared below in the (batch, in, out, p*p) layout
        assert votes.shape == (3, 5, 4, 16)
        votes = votes.transpose(0, 2, 1, 3)
    w = keras.ops.convert_to_numpy(layer.kernel).astype("float64")
    if normalize:
        w = w / np.sqrt((w**2).sum(axis=(-2, -1), keepdims=True) + 1e-5)
    for b in range(3):
        for i in range(4):
            for j in range(5):
                p = poses[b, i].reshape(4, 4)
                w_ij = w[j] if shared else w[i, j]
                expected = p @ w_ij if side == "right" else w_ij @ p
                np.testing.assert_allclose(votes[b, i, j], expected.reshape(16), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("parent_major", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_matrix_votes_gradients(side, parent_major):
    """The gradients of ``sum(votes * G)`` with respect to the poses and ``W`` (not shared), from NumPy's
    products: ``dP = sum_j W^T G`` and ``dW = sum_b G P^T`` (left), ``dP = sum_j G W^T`` and ``dW = sum_b P^T G`` (right).
    Both on every backend: the kernel's with the layer run on a replaced kernel value (``keras.StatelessScope``)."""
    rng = np.random.default_rng(5)
    poses = rng.normal(size=(3, 4, 16)).astype("float32")
    upstream = rng.normal(size=(3, 5, 4, 16) if parent_major else (3, 4, 5, 16)).astype("float32")
    layer = MatrixVotes(5, side=side)
    layer.build(poses.shape)
    upstream_tensor = keras.ops.convert_to_tensor(upstream)  # PyTorch cannot multiply a grad-tracking tensor by NumPy
    d_poses = input_gradient(lambda x: layer(x, parent_major=parent_major) * upstream_tensor, poses)
    g = (
        (upstream.transpose(0, 2, 1, 3) if parent_major else upstream).reshape(3, 4, 5, 4, 4).astype("float64")
    )  # (b, i, j, 4, 4)
    p = poses.reshape(3, 4, 4, 4).astype("float64")
    w = keras.ops.convert_to_numpy(layer.kernel).astype("float64")  # (i, j, 4, 4)
    if side == "left":  # V = W P
        expected_poses = np.einsum("ijyx,bijyz->bixz", w, g)
        expected_kernel = np.einsum("bijxz,biyz->ijxy", g, p)
    else:  # V = P W
        expected_poses = np.einsum("bijxz,ijyz->bixy", g, w)
        expected_kernel = np.einsum("bixy,bijxz->ijyz", p, g)
    np.testing.assert_allclose(d_poses, expected_poses.reshape(3, 4, 16), rtol=1e-5, atol=1e-5)

    def with_kernel(value):
        with keras.StatelessScope(state_mapping=[(layer.kernel, value)]):
            return layer(keras.ops.convert_to_tensor(poses), parent_major=parent_major) * upstream_tensor

    d_kernel = input_gradient(with_kernel, keras.ops.convert_to_numpy(layer.kernel))
    np.testing.assert_allclose(d_kernel, expected_kernel, rtol=1e-5, atol=1e-5)


def test_identity_matrix_votes_are_copies():
    poses = np.random.default_rng(3).normal(size=(2, 3, 9)).astype("float32")
    layer = MatrixVotes(2, kernel_initializer=keras.initializers.Zeros())
    layer.build(poses.shape)
    layer.kernel.assign(np.broadcast_to(np.eye(3, dtype="float32"), (3, 2, 3, 3)))
    votes = keras.ops.convert_to_numpy(layer(poses))
    np.testing.assert_allclose(votes[:, :, 0], poses, rtol=1e-6)


def test_layer_contracts_and_errors():
    u = np.random.default_rng(4).normal(size=(3, 4, 16)).astype("float32")
    run_layer_test(
        VectorVotes, {"num_capsules": 2, "capsule_dim": 5}, u, expected_output_shapes=[(3, 4, 2, 5)], run_export=False
    )
    for shared in (False, True):
        run_layer_test(
            MatrixVotes,
            {"num_capsules": 2, "shared": shared},
            u,
            expected_output_shapes=[(3, 4, 2, 16)],
            run_export=False,
        )
    with pytest.raises(ValueError, match=r"MatrixVotes.*perfect square.*8"):
        MatrixVotes(2)(np.zeros((2, 3, 8), "float32"))
    with pytest.raises(ValueError, match=r"VectorVotes.*inputs.*rank 3"):
        VectorVotes(2, 4)(np.zeros((2, 3), "float32"))
    with pytest.raises(ValueError, match=r"side"):
        MatrixVotes(2, side="up")
    with pytest.raises(TypeError, match="num_capsules"):
        VectorVotes(2.5, 4)


@pytest.mark.parametrize("shared", [False, True])
def test_vector_child_sums(shared):
    """``child_sums``: sum_i u_i W_ij, from NumPy products."""
    u = np.random.default_rng(10).normal(size=(2, 5, 3)).astype("float32")
    layer = VectorVotes(4, 6, shared=shared)
    layer.build(u.shape)
    w = keras.ops.convert_to_numpy(layer.kernel).astype("float64")
    expected = sum(np.stack([u[:, i] @ (w[j] if shared else w[i, j]) for j in range(4)], axis=1) for i in range(5))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layer.child_sums(u)), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_matrix_child_sums(side, shared):
    """``child_sums``: sum_i P_i W_ij (right) or sum_i W_ij P_i (left), from NumPy products."""
    poses = np.random.default_rng(11).normal(size=(3, 4, 16)).astype("float32")
    layer = MatrixVotes(5, side=side, shared=shared, normalize=True)
    layer.build(poses.shape)
    w = keras.ops.convert_to_numpy(layer.kernel).astype("float64")
    w = w / np.sqrt((w**2).sum(axis=(-2, -1), keepdims=True) + 1e-5)
    expected = np.zeros((3, 5, 4, 4))
    for i in range(4):
        for j in range(5):
            p, w_ij = poses[:, i].reshape(3, 4, 4), w[j] if shared else w[i, j]
            expected[:, j] += p @ w_ij if side == "right" else w_ij @ p
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer.child_sums(poses)), expected.reshape(3, 5, 16), rtol=1e-4, atol=1e-5
    )
