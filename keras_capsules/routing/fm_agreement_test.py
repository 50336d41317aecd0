import keras
import numpy as np
import pytest

from keras_capsules.routing import FMAgreementRouter
from keras_capsules.routing.fm_agreement import fm_pairwise_sum
from keras_capsules.testing import (
    as_float64,
    assert_registry_round_trip,
    assert_routes_finitely,
    assert_routes_like,
    run_router_test,
)

EPS = 1e-7


def np_unit(x):
    return x / np.sqrt((x**2).sum(-1, keepdims=True) + EPS)


def np_fm_explicit(votes, scale="paper"):
    """Algorithm 1 of the FM-agreement paper (Zhao, Wang & Huang) with the explicit O(k n^2) pairwise sum: s_j = (1/n) sum_{i<i'} u_i * u_i'."""
    u = np_unit(votes)
    n = u.shape[1]
    s = np.zeros(u.shape[:1] + u.shape[2:])
    for i in range(n):
        for k in range(i + 1, n):
            s += u[:, i] * u[:, k]
    s /= n
    if scale == "code":
        s *= 2.0
    return u, s


def np_fm_router(votes, scale="paper", normalize_pose=True):
    u, s = np_fm_explicit(votes, scale)
    n = u.shape[1]
    others = np.stack([u.sum(1) - u[:, i] for i in range(n)], axis=1)
    g = (u * others).sum(-1) / max(n - 1, 1)
    share = np.maximum(1.0 + g, 0.0) + 1e-6
    coupling = share / share.sum(1, keepdims=True)
    poses = np_unit(s) if normalize_pose else s
    return poses, s.sum(-1), coupling


def np_batch_norm(x, epsilon=1e-3):
    mean = x.mean(axis=(0, 1, 2), keepdims=True)
    var = x.var(axis=(0, 1, 2), keepdims=True)
    return (x - mean) / np.sqrt(var + epsilon)


def random_votes(seed, shape=(3, 6, 4, 5), scale=1.0):
    return (np.random.default_rng(seed).normal(size=shape) * scale).astype("float32")


@pytest.mark.parametrize("n", [1, 2, 7, 40])
@pytest.mark.parametrize("scale", ["paper", "code"])
def test_linear_form_equals_explicit_pairwise_sum(n, scale):
    units = np_unit(np.random.default_rng(n).normal(size=(2, n, 3, 6)))
    _, expected = np_fm_explicit(units, scale)
    total, squares = units.sum(axis=1), (units**2).sum(axis=1)
    got = as_float64(
        fm_pairwise_sum(
            keras.ops.convert_to_tensor(total.astype("float32")),
            keras.ops.convert_to_tensor(squares.astype("float32")),
            n,
            scale,
        )
    )
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("scale", ["paper", "code"])
@pytest.mark.parametrize("normalize_pose", [True, False])
def test_matches_numpy_reference(scale, normalize_pose):
    votes = random_votes(0)
    router = FMAgreementRouter(scale=scale, normalize_pose=normalize_pose, batch_norm=False)
    expected = np_fm_router(votes.astype("float64"), scale, normalize_pose)
    assert_routes_like(router(votes, return_coupling=True), expected, atol=(1e-5, 1e-5, 1e-6))


def test_batch_norm_on_votes_matches_reference():
    votes = random_votes(1) * 3.0 + 1.0
    router = FMAgreementRouter()
    expected = np_fm_router(np_batch_norm(votes.astype("float64")))
    assert_routes_like(router(votes, training=True), expected[:2], rtol=1e-3, atol=1e-4)
    # Inference uses the moving statistics, which training updated from their initial (0, 1).
    assert len(router.trainable_weights) == 2 and len(router.non_trainable_weights) == 2
    assert not np.allclose(as_float64(router.vote_norm.moving_mean), 0.0)
    # With fresh statistics, inference batch norm only rescales (by 1/sqrt(1 + eps)): unit votes are unchanged.
    assert_routes_like(FMAgreementRouter()(votes, training=False), np_fm_router(votes.astype("float64"))[:1])


@pytest.mark.parametrize("axis, reduce", [([1, 2, 3], (0,)), (2, (0, 1, 3)), ([-1, 1], (0, 2))])
def test_batch_norm_axis_option(axis, reduce):
    votes = random_votes(2) * 2.0 + 0.5
    router = FMAgreementRouter(batch_norm_axis=axis)
    outputs = router(votes, training=True)
    v = votes.astype("float64")
    normalised = (v - v.mean(axis=reduce, keepdims=True)) / np.sqrt(v.var(axis=reduce, keepdims=True) + 1e-3)
    assert_routes_like(outputs, np_fm_router(normalised)[:1], rtol=1e-3, atol=1e-4)
    assert router.vote_norm.gamma.shape[0] == int(np.prod([votes.shape[a] for a in range(1, 4) if a not in reduce]))


@pytest.mark.parametrize("axis", [[1, 2, 3], [1, 3], 2])
def test_batch_norm_weights_are_laid_out_in_the_contract_order(axis):
    """Per-feature gamma/beta index the kept axes of (batch, in_caps, out_caps, dim) in that order."""
    votes = random_votes(6)
    router = FMAgreementRouter(batch_norm_axis=axis)
    router(votes)  # build
    kept = sorted({a % 4 for a in (axis if isinstance(axis, list) else [axis])})
    shape = [votes.shape[a] if a in kept else 1 for a in range(4)]
    rng = np.random.default_rng(7)
    gamma, beta = rng.uniform(0.5, 2.0, size=np.prod(shape)), rng.normal(size=np.prod(shape))
    router.vote_norm.gamma.assign(gamma.astype("float32"))
    router.vote_norm.beta.assign(beta.astype("float32"))
    outputs = router(votes, training=False)  # moving statistics (0, 1): y = v / sqrt(1 + eps) * gamma + beta
    y = votes.astype("float64") / np.sqrt(1 + 1e-3) * gamma.reshape(shape) + beta.reshape(shape)
    assert_routes_like(outputs, np_fm_router(y)[:1], rtol=1e-3, atol=1e-4)


def test_squash_activation_matches_reference():
    votes = random_votes(3)
    outputs = FMAgreementRouter(activation="squash", batch_norm=False)(votes)
    _, s = np_fm_explicit(votes.astype("float64"))
    q = (s**2).sum(-1)
    expected = (s * (q / (1 + q) / np.sqrt(q + EPS))[..., None], q / (1 + q))
    assert_routes_like(outputs, expected, rtol=(1e-3, 1e-4), atol=(1e-5, 1e-6))


def test_coupling_sums_to_one_over_children_and_is_permutation_invariant():
    votes = random_votes(4, shape=(2, 9, 3, 4))
    router = FMAgreementRouter(batch_norm=False)
    poses, acts, coupling = (as_float64(o) for o in router(votes, return_coupling=True))
    np.testing.assert_allclose(coupling.sum(axis=1), 1.0, rtol=1e-5)
    assert np.all(coupling >= 0)
    perm = np.random.default_rng(0).permutation(9)
    permuted = router(votes[:, perm], return_coupling=True)
    assert_routes_like(permuted, (poses, acts, coupling[:, perm]), rtol=(1e-4, 1e-4, 1e-5), atol=(1e-5, 1e-5, 0))


def test_agreeing_votes_get_uniform_coupling_and_maximal_activation():
    direction = np.random.default_rng(5).normal(size=(1, 1, 2, 4))
    votes = np.repeat(direction, 6, axis=1).astype("float32") * np.arange(1, 7, dtype="float32")[None, :, None, None]
    outputs = FMAgreementRouter(batch_norm=False)(votes, return_coupling=True)
    # a_j = (1/2n) (n^2 - n) for n identical unit votes
    assert_routes_like(outputs, (None, (6 - 1) / 2, 1 / 6), rtol=1e-5, atol=0)


def test_quantized_coupling_at_inference():
    votes = random_votes(6)
    _, _, c = FMAgreementRouter(quantize_levels=11, batch_norm=False)(votes, training=False, return_coupling=True)
    c = as_float64(c)
    np.testing.assert_allclose(c * 10, np.round(c * 10), atol=1e-5)


def first_scaled(outputs):
    """The poses times 1e-3: the outputs whose summed gradient must be finite."""
    return outputs[0] * 1e-3


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("magnitude", ["zero", "unit", "huge"])
@pytest.mark.parametrize("training", [False, True])
def test_finite_forward_and_gradient(dtype, magnitude, training):
    huge = 6e4 if dtype == "float16" else 1e30
    scale = {"zero": 0.0, "unit": 1.0, "huge": huge}[magnitude]
    votes = keras.ops.cast(np.random.default_rng(7).uniform(-1, 1, size=(2, 5, 3, 4)) * scale, dtype)
    assert_routes_finitely(FMAgreementRouter(dtype=dtype), votes, training=training, gradient_of=first_scaled)


def test_in_capsule_layers():
    from keras_capsules.layers import ConvCaps, FcCaps

    poses = np.random.default_rng(8).normal(size=(2, 5, 5, 3, 16)).astype("float32")
    conv_poses, conv_acts = ConvCaps(4, kernel_size=3, strides=2, router="fm_agreement", transform="matrix")(poses)
    assert tuple(conv_poses.shape) == (2, 2, 2, 4, 16) and tuple(conv_acts.shape) == (2, 2, 2, 4)
    fc_poses, fc_acts, c = FcCaps(3, router={"name": "fm_agreement", "scale": "code"}, transform="matrix")(
        (conv_poses, conv_acts), return_coupling=True
    )
    assert tuple(fc_poses.shape) == (2, 3, 16) and tuple(c.shape) == (2, 16, 3)


def test_router_contract():
    """Float16/bfloat16 are checked over three magnitudes by test_finite_forward_and_gradient."""
    votes = random_votes(9, shape=(4, 5, 3, 4))

    def reference(router, votes, activations):
        # At inference the vote batch norm starts from its moving statistics (0, 1), gamma 1 and beta 0.
        return np_fm_router(votes / np.sqrt(1 + 1e-3), "code", normalize_pose=False)

    run_router_test(
        FMAgreementRouter, {"scale": "code", "normalize_pose": False}, votes, None, reference, atol=(1e-5, 1e-5, 1e-6),
        dtypes=(),
    )  # fmt: skip


def test_registry_round_trip():
    assert_registry_round_trip("fm_agreement", batch_norm=False, activation="squash")


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"iterations": 3}, ValueError, "iterations"),
        ({"scale": "half"}, ValueError, "scale"),
        ({"activation": "relu"}, ValueError, "activation"),
        ({"batch_norm_axis": "last"}, TypeError, "batch_norm_axis"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        FMAgreementRouter(**kwargs)


def test_bad_batch_norm_axis():
    with pytest.raises(ValueError, match="batch_norm_axis"):
        FMAgreementRouter(batch_norm_axis=0)(random_votes(0))


def test_votes_whose_squares_overflow_route_like_ordinary_ones():
    # Without the batch norm the agreement only sees unit votes, so scaling every vote by 1e25
    # (squared norms overflow float32 and take the guarded branch) must give the poses and
    # activations of the unscaled votes. (With the batch norm, votes are clipped to 1e15 first:
    # finite, but not scale-free; test_finite_forward_and_gradient covers that case.)
    votes = random_votes(11, shape=(2, 6, 3, 4))
    router = FMAgreementRouter(batch_norm=False)
    expected = [as_float64(o) for o in router(votes, training=False)]
    assert_routes_like(router(votes * np.float32(1e25), training=False), expected, rtol=1e-5, atol=1e-6)
