import keras
import numpy as np
import pytest

from keras_capsules.routing import SelfAttentionRouter
from keras_capsules.testing import assert_finite, run_layer_test


def np_self_attention(votes, bias):
    """Efficient-CapsNet FCCaps written from the equations: explicit A_j = U_j U_j^T / sqrt(d)."""
    b, n_in, n_out, d = votes.shape
    u = votes.transpose(0, 2, 1, 3)  # (b, out, in, d)
    a = np.einsum("bjid,bjkd->bjik", u, u) / np.sqrt(d)
    e = a.sum(-1)  # (b, out, in)
    c = np.exp(e - e.max(1, keepdims=True))
    c = c / c.sum(1, keepdims=True)  # softmax over out
    s = np.einsum("bji,bjid->bjd", c + bias.T[None], u)
    n = np.linalg.norm(s, axis=-1, keepdims=True)
    return (1 - np.exp(-n)) * s / n, c.transpose(0, 2, 1)


def test_matches_numpy_reference():
    rng = np.random.default_rng(0)
    votes = rng.normal(size=(2, 7, 3, 4)).astype("float32")
    router = SelfAttentionRouter()
    router.build(votes.shape)
    bias = rng.normal(size=(7, 3)).astype("float32") * 0.1
    router.bias.assign(bias)
    poses, lengths, coupling = router(votes, return_coupling=True)
    expected, expected_c = np_self_attention(votes.astype("float64"), bias)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(poses), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(coupling), expected_c, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(coupling).sum(-1), 1.0, rtol=1e-5)
    assert np.all(keras.ops.convert_to_numpy(lengths) < 1.0)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("scale", [0.0, 1e3])
def test_finite_for_zero_and_large_votes(dtype, scale):
    votes = keras.ops.cast(np.random.default_rng(1).normal(size=(2, 6, 3, 4)) * scale, dtype)
    outputs = SelfAttentionRouter(dtype=dtype)(votes, return_coupling=True)
    assert all(o.dtype == votes.dtype for o in outputs)
    assert_finite([keras.ops.cast(o, "float32") for o in outputs])


def test_layer_contract_and_errors():
    votes = np.random.default_rng(2).normal(size=(3, 5, 4, 6)).astype("float32")
    run_layer_test(SelfAttentionRouter, {}, votes, expected_output_shapes=[(3, 4, 6), (3, 4)])
    with pytest.raises(ValueError, match="iterations"):
        SelfAttentionRouter(iterations=3)
