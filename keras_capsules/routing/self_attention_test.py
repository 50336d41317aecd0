import keras
import numpy as np
import pytest

from keras_capsules.routing import SelfAttentionRouter
from keras_capsules.testing import as_float64, assert_routes_finitely, assert_routes_like, run_router_test


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


def randomise_bias(router, seed=0):
    """Gives a built router a random bias ``(in_caps, out_caps)``, scale 0.1."""
    router.bias.assign((np.random.default_rng(seed).normal(size=router.bias.shape) * 0.1).astype("float32"))


def test_matches_numpy_reference():
    votes = np.random.default_rng(0).normal(size=(2, 7, 3, 4)).astype("float32")
    router = SelfAttentionRouter()
    router.build(votes.shape)
    randomise_bias(router)
    _, lengths, coupling = outputs = router(votes, return_coupling=True)
    expected, expected_c = np_self_attention(votes.astype("float64"), as_float64(router.bias))
    assert_routes_like(outputs, (expected, None, expected_c), atol=(1e-5, None, 1e-6))
    np.testing.assert_allclose(as_float64(coupling).sum(-1), 1.0, rtol=1e-5)
    assert np.all(as_float64(lengths) < 1.0)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("scale", [0.0, 1e3])
def test_finite_for_zero_and_large_votes(dtype, scale):
    votes = keras.ops.cast(np.random.default_rng(1).normal(size=(2, 6, 3, 4)) * scale, dtype)
    assert_routes_finitely(SelfAttentionRouter(dtype=dtype), votes)


def test_router_contract():
    """Float16/bfloat16 are checked at two magnitudes by test_finite_for_zero_and_large_votes."""
    votes = np.random.default_rng(2).normal(size=(3, 5, 4, 6)).astype("float32")

    def reference(router, votes, activations):
        poses, coupling = np_self_attention(votes, as_float64(router.bias))
        return poses, None, coupling

    run_router_test(SelfAttentionRouter, {}, votes, None, reference, randomise_bias, atol=(1e-5, None, 1e-6), dtypes=())


def test_errors():
    with pytest.raises(ValueError, match="iterations"):
        SelfAttentionRouter(iterations=3)
