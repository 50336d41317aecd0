import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.routing import InvertedDotProductRouter
from keras_capsules.testing import (
    as_float64,
    assert_finite,
    assert_routes_finitely,
    assert_routes_like,
    run_router_test,
)

# ---- NumPy reference from docs/reference/routers.md#inverted-dot-product-attention (PyTorch LayerNorm: biased variance, eps 1e-5) -------


def np_layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def np_step(votes, parents, gamma, beta, scale=True):
    """One routing step: votes (b, in, out, d), parents (b, out, d) or None (uniform first pass)."""
    b, n_in, n_out, d = votes.shape
    if parents is None:
        r = np.full((b, n_in, n_out), 1.0 / n_out)
    else:
        logits = np.zeros((b, n_in, n_out))
        for j in range(n_out):
            logits[:, :, j] = (votes[:, :, j] * parents[:, None, j]).sum(-1)
        if scale:
            logits /= np.sqrt(d)
        e = np.exp(logits - logits.max(-1, keepdims=True))
        r = e / e.sum(-1, keepdims=True)
    pooled = (r[..., None] * votes).sum(1)
    return np_layer_norm(pooled, gamma, beta), r


def np_route(votes, gamma, beta, iterations, parents=None, scale=True):
    for _ in range(iterations):
        parents, r = np_step(votes, parents, gamma, beta, scale)
    return parents, r.mean(1), r


def randomise_layer_norm(router, seed=0):
    """Gives a built router a random LayerNorm scale (around 1) and offset; returns both."""
    rng = np.random.default_rng(seed)
    d = router.gamma.shape[0]
    gamma, beta = 1.0 + 0.3 * rng.normal(size=d), 0.2 * rng.normal(size=d)
    router.gamma.assign(gamma.astype("float32"))
    router.beta.assign(beta.astype("float32"))
    return gamma, beta


def make_router(d, seed=0, **kwargs):
    router = InvertedDotProductRouter(**kwargs)
    router.build((None, 5, 3, d))
    return (router, *randomise_layer_norm(router, seed))


def random_votes(seed, shape=(3, 5, 3, 16), scale=1.0):
    return (np.random.default_rng(seed).normal(size=shape) * scale).astype("float32")


def test_first_pass_is_uniform():
    votes = random_votes(0)
    router, gamma, beta = make_router(16, iterations=1)
    expected = np_layer_norm(votes.astype("float64").sum(1) / 3, gamma, beta)
    assert_routes_like(
        router(votes, return_coupling=True), (expected, 1.0 / 3, 1.0 / 3), rtol=(1e-4, 1e-6, 1e-6), atol=(1e-5, 0, 0)
    )


def test_one_step_from_given_poses_matches_numpy():
    votes = random_votes(1)
    parents = random_votes(2, (3, 3, 16))
    router, gamma, beta = make_router(16)
    outputs = router(votes, return_coupling=True, initial_poses=parents, steps=1)
    expected, r = np_step(votes.astype("float64"), parents.astype("float64"), gamma, beta)
    assert_routes_like(outputs, (expected, r.mean(1), r), atol=(1e-5, 1e-6, 1e-6))


@pytest.mark.parametrize("iterations", [1, 2, 3, 5])
@pytest.mark.parametrize("scale", [True, False])
def test_full_routing_matches_numpy(iterations, scale):
    votes = random_votes(3, (2, 6, 4, 9))
    router, gamma, beta = make_router(9, seed=1, iterations=iterations, scale_agreement=scale)
    expected = np_route(votes.astype("float64"), gamma, beta, iterations, scale=scale)
    assert_routes_like(router(votes, return_coupling=True), expected, atol=(1e-5, 1e-6, 1e-6))


def test_invariants_coupling_shares_and_layer_norm_statistics():
    votes = random_votes(4, (4, 7, 5, 16), scale=3.0)
    router = InvertedDotProductRouter(iterations=3)  # gamma = 1, beta = 0
    poses, shares, coupling = router(votes, return_coupling=True)
    np.testing.assert_allclose(as_float64(coupling).sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(as_float64(shares).sum(-1), 1.0, rtol=1e-5)
    p = as_float64(poses)
    np.testing.assert_allclose(p.mean(-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(p.var(-1), 1.0, rtol=1e-3)  # var / (var + 1e-5) ~ 1 for unit-scale votes


def test_dropout_only_in_training():
    votes = random_votes(5)
    router = InvertedDotProductRouter(iterations=2, dropout=0.5, seed=3)
    a = as_float64(router(votes, training=False)[0])
    b = as_float64(router(votes, training=False)[0])
    np.testing.assert_array_equal(a, b)
    c = as_float64(router(votes, training=True)[0])
    assert not np.allclose(a, c)
    assert_finite(c)


def test_quantized_coupling_at_inference():
    votes = random_votes(6)
    router = InvertedDotProductRouter(iterations=2, quantize_levels=11)
    c = as_float64(router(votes, training=False, return_coupling=True)[2])
    np.testing.assert_allclose(c * 10, np.round(c * 10), atol=1e-5)
    c = as_float64(router(votes, training=False, return_coupling=True, finalize=False)[2])
    assert not np.allclose(c * 10, np.round(c * 10), atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("scale", [0.0, 1.0, "huge"])
def test_finite_forward_and_gradients(dtype, scale):
    if scale == "huge":
        scale = 6e4 / 4 if dtype == "float16" else 3e38 / 4
    votes = keras.ops.cast(random_votes(7, scale=1.0) * scale, dtype)
    weights = keras.ops.convert_to_tensor(np.arange(16, dtype="float32"))  # layer-normalised poses sum to zero

    def weighted_poses(outputs):
        return keras.ops.cast(outputs[0], "float32") * weights

    assert_routes_finitely(InvertedDotProductRouter(iterations=3, dtype=dtype), votes, gradient_of=weighted_poses)


def test_router_contract():
    """Float16/bfloat16 are checked over three magnitudes by test_finite_forward_and_gradients; the dropout is
    inactive at inference, where the reference is compared."""
    votes = random_votes(8, (3, 5, 4, 16))

    def reference(router, votes, activations):
        return np_route(votes, as_float64(router.gamma), as_float64(router.beta), 2)

    init = {"iterations": 2, "dropout": 0.1, "seed": 1}
    run_router_test(
        InvertedDotProductRouter, init, votes, None, reference, randomise_layer_norm, atol=(1e-5, 1e-6, 1e-6), dtypes=()
    )


def test_registry_default_and_errors():
    assert routing.get("inverted_dot_product").iterations == 2
    assert InvertedDotProductRouter.supports_initial_poses
    votes = random_votes(9)
    with pytest.raises(ValueError, match=r"initial_poses.*rank 3"):
        InvertedDotProductRouter()(votes, initial_poses=np.zeros((3, 3), "float32"))
    with pytest.raises(ValueError, match=r"initial_poses.*out_caps = 3"):
        InvertedDotProductRouter()(votes, initial_poses=np.zeros((3, 4, 16), "float32"))
    with pytest.raises(ValueError, match=r"initial_poses.*out_dim = 16"):
        InvertedDotProductRouter()(votes, initial_poses=np.zeros((3, 3, 9), "float32"))
    with pytest.raises(ValueError, match="dropout"):
        InvertedDotProductRouter(dropout=1.0)
    with pytest.raises(ValueError, match="steps"):
        InvertedDotProductRouter()(votes, steps=0)


def test_empty_batch_gives_empty_outputs():
    poses, shares, coupling = InvertedDotProductRouter()(np.zeros((0, 6, 3, 4), "float32"), return_coupling=True)
    assert (tuple(poses.shape), tuple(shares.shape), tuple(coupling.shape)) == ((0, 3, 4), (0, 3), (0, 6, 3))


@pytest.mark.parametrize("quantize_levels", [None, 4])
def test_route_vote_sums_is_the_uniform_first_pass(quantize_levels):
    """From sum_i v_ij alone: LN(c * sum_i v_ij) with c = 1/out_caps (quantised at inference), shares c."""
    votes = random_votes(8)
    router, gamma, beta = make_router(16, seed=3, iterations=1, quantize_levels=quantize_levels)
    outputs = router.route_vote_sums(votes.sum(axis=1), 5, training=False, return_coupling=True)
    c = 1.0 / 3  # three parents; 1/3 is also a level of q_4 (0, 1/3, 2/3, 1)
    expected, expected_shares, _ = np_route(votes.astype("float64"), gamma, beta, 1)
    assert tuple(outputs[2].shape) == (3, 5, 3)
    assert_routes_like(outputs, (expected, expected_shares, c), rtol=(1e-4, 1e-6, 1e-6), atol=(1e-5, 0, 0))


def test_route_vote_sums_quantises_the_uniform_coupling():
    """q_3 has levels {0, 1/2, 1}: the uniform 1/4 of four parents becomes 1/2 at inference."""
    votes = random_votes(9, shape=(2, 5, 4, 16))
    router = InvertedDotProductRouter(iterations=1, quantize_levels=3)
    router.build(votes.shape)
    _, shares, coupling = router.route_vote_sums(votes.sum(axis=1), 5, training=False, return_coupling=True)
    np.testing.assert_allclose(as_float64(coupling), 0.5)
    np.testing.assert_allclose(as_float64(shares), 0.5)
    _, shares = router.route_vote_sums(votes.sum(axis=1), 5, training=True)
    np.testing.assert_allclose(as_float64(shares), 0.25)
