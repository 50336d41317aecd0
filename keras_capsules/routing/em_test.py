import math

import keras
import numpy as np
import pytest

from keras_capsules.layers import ConvCaps, FcCaps
from keras_capsules.routing import EMRouter
from keras_capsules.routing.em import inverse_temperatures
from keras_capsules.testing import (
    as_float64,
    assert_finite,
    assert_routes_finitely,
    assert_routes_like,
    assert_training_vote_gradient,
    input_gradient,
    run_layer_test,
    run_router_test,
)

EPS = 1e-9


# ---- NumPy reference, written from the equations of docs/reference/routers.md#em-routing ----------------------------


def np_m_step(r, votes, acts, beta_u, beta_a, lam, factor):
    """One M-step for one routing row: r (in, out), votes (in, out, d), acts (in,)."""
    out_caps = votes.shape[1]
    mu = np.zeros((out_caps, votes.shape[2]))
    var = np.zeros_like(mu)
    a_out = np.zeros(out_caps)
    for j in range(out_caps):
        w = r[:, j] * acts
        total = w.sum()
        mu[j] = (w[:, None] * votes[:, j]).sum(0) / (total + EPS)
        var[j] = (w[:, None] * (votes[:, j] - mu[j]) ** 2).sum(0) / (total + EPS) + 1e-9
        cost = ((beta_u[j] + 0.5 * np.log(var[j])) * total * factor).sum()
        a_out[j] = 1.0 / (1.0 + np.exp(-lam * (beta_a[j] - cost)))
    return mu, var, a_out


def np_log_assign(votes, mu, var, a_out):
    """zz_ij = log(a_j + eps) + sum_h log N(V_ij^h; mu_j^h, var_j^h): (in, out)."""
    log_p = (-((votes - mu[None]) ** 2) / (2 * var[None]) - 0.5 * np.log(2 * np.pi * var[None])).sum(-1)
    return np.log(a_out + EPS)[None] + log_p


def np_em(votes, acts, beta_u, beta_a, iterations, normalize_cost=True):
    """Full EM routing on (batch, in, out, d) votes, each row on its own (softmax over the row's parents)."""
    batch, n_in, n_out, _ = votes.shape
    factor = 100.0 * n_out / n_in if normalize_cost else 1.0
    lams = [0.01 * (1 - 0.95 ** (t + 1)) for t in range(iterations)]
    poses, outs, couplings = [], [], []
    for b in range(batch):
        r = np.full((n_in, n_out), 1.0 / n_out)
        for t in range(iterations):
            mu, var, a_out = np_m_step(r, votes[b], acts[b], beta_u, beta_a, lams[t], factor)
            if t < iterations - 1:
                zz = np_log_assign(votes[b], mu, var, a_out)
                zz = zz - zz.max(1, keepdims=True)
                r_new = np.exp(zz) / np.exp(zz).sum(1, keepdims=True)
                r = r_new
        poses.append(mu)
        outs.append(a_out)
        couplings.append(r)
    return np.stack(poses), np.stack(outs), np.stack(couplings)


def np_em_spatial(votes, acts, beta_u, beta_a, iterations, grid, k, s):
    """EM over a conv layer with IBM's cross-position E-step, built from an explicit child->parent map.

    votes: (batch * P, K*K*T, O, d) in ConvCaps' layout (positions row-major, slots (kr, kc, t)).
    """
    height, width = grid
    out_h, out_w = (height - k) // s + 1, (width - k) // s + 1
    positions = out_h * out_w
    n_rows, n_in, n_out, _ = votes.shape
    batch, types = n_rows // positions, n_in // (k * k)
    # child spatial index of every (position, kernel offset) slot
    child_of = np.zeros((positions, k * k), int)
    for oh in range(out_h):
        for ow in range(out_w):
            for kr in range(k):
                for kc in range(k):
                    child_of[oh * out_w + ow, kr * k + kc] = (oh * s + kr) * width + (ow * s + kc)
    parents_per_child = np.bincount(child_of.ravel(), minlength=height * width)
    factor = 100.0 * n_out / n_in
    lams = [0.01 * (1 - 0.95 ** (t + 1)) for t in range(iterations)]
    v = votes.reshape(batch, positions, n_in, n_out, -1)
    a = acts.reshape(batch, positions, n_in)
    r = np.zeros((batch, positions, k * k, types, n_out))
    for p in range(positions):
        for kk in range(k * k):
            r[:, p, kk] = 1.0 / (parents_per_child[child_of[p, kk]] * n_out)
    for t in range(iterations):
        mu = np.zeros((batch, positions, n_out, v.shape[-1]))
        out = np.zeros((batch, positions, n_out))
        zz = np.zeros((batch, positions, k * k, types, n_out))
        for b in range(batch):
            for p in range(positions):
                rp = r[b, p].reshape(n_in, n_out)
                m, var, a_out = np_m_step(rp, v[b, p], a[b, p], beta_u, beta_a, lams[t], factor)
                mu[b, p], out[b, p] = m, a_out
                zz[b, p] = np_log_assign(v[b, p], m, var, a_out).reshape(k * k, types, n_out)
        if t == iterations - 1:
            break
        r = np.zeros_like(zz)
        for b in range(batch):
            for c in range(height * width):
                slots = np.argwhere(child_of == c)
                if not len(slots):
                    continue
                for ti in range(types):
                    logits = np.stack([zz[b, p, kk, ti] for p, kk in slots])  # (n_parents_positions, out)
                    e = np.exp(logits - logits.max())
                    e /= e.sum()
                    for (p, kk), row in zip(slots, e):
                        r[b, p, kk, ti] = row
    coupling = r.reshape(n_rows, n_in, n_out)
    return mu.reshape(n_rows, n_out, -1), out.reshape(n_rows, n_out), coupling


def randomise_betas(router, seed=0):
    """Gives a built router random ``beta_a`` (normal, scale 300) and ``beta_u`` (standard normal); returns both."""
    rng = np.random.default_rng(seed)
    out_caps = router.beta_a.shape[0]
    beta_a = rng.normal(size=out_caps) * 300.0
    beta_u = rng.normal(size=out_caps)
    router.beta_a.assign(beta_a.astype("float32"))
    router.beta_u.assign(beta_u.astype("float32"))
    return beta_u, beta_a


def make_router(votes_shape, seed=0, **kwargs):
    router = EMRouter(**kwargs)
    router.build(votes_shape)
    return (router, *randomise_betas(router, seed))


def random_inputs(seed, shape=(3, 8, 4, 16)):
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape).astype("float32"), rng.uniform(size=shape[:2]).astype("float32")


# ---- tests --------------------------------------------------------------------------------------


def test_inverse_temperature_schedule():
    np.testing.assert_allclose(inverse_temperatures(3), [5.0e-4, 9.75e-4, 1.42625e-3], rtol=1e-12)


def test_one_m_step_and_e_step_match_numpy():
    votes, acts = random_inputs(0)
    router, beta_u, beta_a = make_router(votes.shape)
    r = np.random.default_rng(9).dirichlet(np.ones(4), size=(3, 8)).astype("float32")
    # the router iterates in the parent-major layout (batch, out, in[, d])
    r_pm, votes_pm = r.transpose(0, 2, 1), votes.transpose(0, 2, 1, 3)
    mean, variance, out, spread = router._m_step(
        keras.ops.convert_to_tensor(r_pm),
        keras.ops.convert_to_tensor(votes_pm),
        keras.ops.convert_to_tensor(acts),
        5e-4,
    )
    new_r = as_float64(router.parent_softmax(router._log_assignments(spread, variance, out))).transpose(0, 2, 1)
    for b in range(3):
        mu, var, a_out = np_m_step(
            r[b].astype("float64"), votes[b].astype("float64"), acts[b], beta_u, beta_a, 5e-4, 100 * 4 / 8
        )
        np.testing.assert_allclose(as_float64(mean)[b], mu, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(as_float64(variance)[b], var, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(as_float64(out)[b], a_out, rtol=1e-4, atol=1e-6)
        zz = np_log_assign(votes[b].astype("float64"), mu, var, a_out)
        expected = np.exp(zz - zz.max(1, keepdims=True))
        np.testing.assert_allclose(new_r[b], expected / expected.sum(1, keepdims=True), rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("iterations", [1, 2, 3])
@pytest.mark.parametrize("normalize_cost", [True, False])
def test_full_routing_matches_numpy(iterations, normalize_cost):
    votes, acts = random_inputs(1)
    router, beta_u, beta_a = make_router(votes.shape, iterations=iterations, normalize_cost=normalize_cost)
    if not normalize_cost:
        router.beta_a.assign((beta_a / 100).astype("float32"))
        beta_a = beta_a / 100
    _, out, coupling = outputs = router(votes, acts, return_coupling=True)
    expected = np_em(votes.astype("float64"), acts.astype("float64"), beta_u, beta_a, iterations, normalize_cost)
    assert_routes_like(outputs, expected, rtol=1e-3, atol=(1e-4, 1e-5, 1e-5))
    np.testing.assert_allclose(as_float64(coupling).sum(-1), 1.0, rtol=1e-5)
    assert np.all((as_float64(out) >= 0) & (as_float64(out) <= 1))


def test_missing_activations_mean_ones():
    votes, _ = random_inputs(2)
    router, _, _ = make_router(votes.shape)
    a = as_float64(router(votes)[1])
    b = as_float64(router(votes, np.ones(votes.shape[:2], "float32"))[1])
    np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("strides", [1, 2])
def test_spatial_routing_matches_numpy(strides):
    grid, k, types, out_caps, batch = (5, 5), 3, 2, 3, 2
    positions = (((5 - k) // strides) + 1) ** 2
    rng = np.random.default_rng(3)
    votes = rng.normal(size=(batch * positions, k * k * types, out_caps, 4)).astype("float32")
    acts = rng.uniform(size=votes.shape[:2]).astype("float32")
    kwargs = dict(iterations=3, child_grid=grid, kernel_size=k, strides=strides)
    router, beta_u, beta_a = make_router(votes.shape, **kwargs)
    expected = np_em_spatial(votes.astype("float64"), acts.astype("float64"), beta_u, beta_a, 3, grid, k, strides)
    assert_routes_like(router(votes, acts, return_coupling=True), expected, rtol=1e-3, atol=(1e-4, 1e-5, 1e-6))


def test_spatial_initial_coupling_is_ibm_init_rr():
    # 4x4 grid, K=3, stride 1: corner children feed 1 parent position, centre ones 4.
    router = EMRouter(iterations=1, child_grid=(4, 4), kernel_size=3, strides=1)
    votes = np.zeros((2 * 4, 9 * 2, 5, 16), "float32")
    coupling = as_float64(router(votes, return_coupling=True)[2]).reshape(2, 4, 9, 2, 5)
    np.testing.assert_allclose(coupling[0, 0, 0], 1.0 / (1 * 5))  # position (0,0), offset (0,0): child (0,0)
    np.testing.assert_allclose(coupling[0, 0, 4], 1.0 / (4 * 5))  # offset (1,1): child (1,1) is in every window
    np.testing.assert_allclose(coupling[1, 3, 8], 1.0 / (1 * 5))  # last window, last offset: corner (3,3)
    # summed over every (position, type) parent a child feeds, R is 1 (IBM's check in init_rr)
    assert math.isclose(coupling[0].sum(), 4 * 4 * 2, rel_tol=1e-5)


def test_spatial_e_step_sums_to_one_over_each_childs_parents():
    router = EMRouter(iterations=2, child_grid=(5, 5), kernel_size=3, strides=1)
    rng = np.random.default_rng(4)
    votes = rng.normal(size=(9, 9 * 2, 3, 16)).astype("float32")
    coupling = as_float64(router(votes, rng.uniform(size=(9, 18)).astype("float32"), return_coupling=True)[2])
    totals = np.zeros((25, 2))
    r = coupling.reshape(3, 3, 3, 3, 2, 3)  # (oh, ow, kr, kc, type, out)
    for oh in range(3):
        for ow in range(3):
            for kr in range(3):
                for kc in range(3):
                    totals[(oh + kr) * 5 + ow + kc] += r[oh, ow, kr, kc].sum(-1)
    np.testing.assert_allclose(totals, 1.0, rtol=1e-5)
    assert not np.allclose(coupling.sum(-1), 1.0)  # rows alone do not sum to 1


def test_beta_initialisation_is_ibms():
    router = EMRouter()
    router.build((None, 300, 400, 16))
    beta_a, beta_u = as_float64(router.beta_a), as_float64(router.beta_u)
    assert beta_a.shape == beta_u.shape == (400,)
    assert -2000 <= beta_a.min() and beta_a.max() <= 0 and abs(beta_a.mean() + 1000) < 100
    limit = math.sqrt(6 / 401)
    assert np.abs(beta_u).max() <= limit and beta_u.std() > limit / 3


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("case", ["zero", "random", "huge", "huge_idle"])
def test_finite_forward_and_gradients(dtype, case):
    rng = np.random.default_rng(5)
    shape = (2, 9 * 2, 4, 16)
    big = 6e4 if dtype == "float16" else 3e38
    votes = {"zero": np.zeros(shape), "random": rng.normal(size=shape)}.get(case, rng.normal(size=shape) * big / 4)
    acts = np.zeros(shape[:2]) if case in ("zero", "huge_idle") else rng.uniform(size=shape[:2])
    votes = keras.ops.cast(votes.astype("float32"), dtype)
    acts = keras.ops.cast(acts.astype("float32"), dtype)
    router = EMRouter(iterations=3, child_grid=(4, 4), kernel_size=3, strides=2, dtype=dtype)
    assert_routes_finitely(router, votes, acts, gradient_of=lambda outputs: outputs)


def test_zero_activations_with_votes_give_finite_float16_gradients():
    # d mu / d a_i = R (V_i - mu) / (sum R' + eps) is ~|V| / 1e-9 here: clipped to float16's range.
    rng = np.random.default_rng(6)
    votes = keras.ops.cast(rng.normal(size=(2, 6, 3, 16)).astype("float32"), "float16")
    acts = keras.ops.zeros((2, 6), "float16")
    router = EMRouter(dtype="float16")
    grad = input_gradient(lambda a: router(votes, a), acts)
    assert_finite(grad)
    assert np.abs(grad).max() <= 65504


def test_router_contract():
    """Float16/bfloat16 are checked over four cases by test_finite_forward_and_gradients."""
    votes, acts = random_inputs(7, shape=(3, 6, 4, 16))

    def reference(router, votes, activations):
        beta_u, beta_a = as_float64(router.beta_u), as_float64(router.beta_a)
        return np_em(votes, activations, beta_u, beta_a, 2)

    run_router_test(
        EMRouter,
        {"iterations": 2},
        votes,
        acts,
        reference,
        randomise_betas,
        rtol=1e-3,
        atol=(1e-4, 1e-5, 1e-5),
        dtypes=(),
    )


def test_spatial_router_contract_inside_conv_caps():
    """The spatial router needs positions folded into the batch, so its contract runs inside ConvCaps."""
    router = {"name": "em", "iterations": 2, "child_grid": [5, 5], "kernel_size": 3, "strides": 2}
    rng = np.random.default_rng(8)
    grid = (rng.normal(size=(3, 5, 5, 2, 16)).astype("float32"), rng.uniform(size=(3, 5, 5, 2)).astype("float32"))
    run_layer_test(
        ConvCaps,
        {"num_capsules": 3, "kernel_size": 3, "strides": 2, "transform": "matrix", "router": router},
        grid,
        expected_output_shapes=[(3, 2, 2, 3, 16), (3, 2, 2, 3)],
    )


def test_inside_capsule_layers():
    rng = np.random.default_rng(9)
    grid = (rng.normal(size=(2, 5, 5, 2, 16)).astype("float32"), rng.uniform(size=(2, 5, 5, 2)).astype("float32"))
    conv = ConvCaps(3, kernel_size=3, transform="matrix", router=EMRouter(child_grid=(5, 5), kernel_size=3))
    poses, acts = conv(grid)
    assert tuple(poses.shape) == (2, 3, 3, 3, 16) and tuple(acts.shape) == (2, 3, 3, 3)
    poses, acts = FcCaps(4, router="em", transform="matrix")((poses, acts))
    assert tuple(poses.shape) == (2, 4, 16)
    assert_finite([poses, acts])


def test_errors():
    with pytest.raises(ValueError, match=r"child_grid.*pair"):
        EMRouter(child_grid=(4, 4, 4))
    with pytest.raises(ValueError, match="padding"):
        EMRouter(padding="full")
    with pytest.raises(ValueError, match="max_vote"):
        EMRouter(max_vote=0)
    with pytest.raises(ValueError, match=r"EMRouter.*child_grid.*input grid.*route_position_chunks.*None"):
        EMRouter(iterations=2).route_position_chunks([], None, [], "float32")
    with pytest.raises(ValueError, match=r"EMRouter.*votes.*divisible by kernel_size\*\*2 = 9"):
        EMRouter(child_grid=(4, 4), kernel_size=3)(np.zeros((4, 10, 3, 16), "float32"))
    # non-square poses are refused by the matrix transform before they reach EM routing
    with pytest.raises(ValueError, match=r"perfect square"):
        FcCaps(3, router="em", transform="matrix")(np.zeros((2, 5, 12), "float32"))


@pytest.mark.parametrize("jit_compile", [False, True])
def test_training_call_matches_numpy_compiled_or_not(jit_compile):
    votes, acts = random_inputs(12)
    router, beta_u, beta_a = make_router(votes.shape, iterations=3, jit_compile=jit_compile)
    assert router.compiles(True) == (jit_compile and keras.backend.backend() == "tensorflow")
    assert not EMRouter().compiles(True)  # measured no faster inside MatrixCapsNet's step: off by default

    def reference(v):
        return np_em(v, acts.astype("float64"), beta_u, beta_a, 3)[:2]

    assert_routes_like(router(votes, acts, training=True), reference(votes.astype("float64")), 1e-3, (1e-4, 1e-5))
    assert_training_vote_gradient(router, reference, votes, acts, rtol=2e-3, atol=2e-4)
