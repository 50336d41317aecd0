import math

import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.layers import ConvCaps
from keras_capsules.routing import VariationalBayesRouter
from keras_capsules.routing.variational_bayes import digamma
from keras_capsules.testing import (
    as_float64,
    assert_finite,
    assert_routes_finitely,
    assert_routes_like,
    input_gradient,
    run_layer_test,
    run_router_test,
)

# ---- NumPy reference, written from Ribeiro et al. (2020), Section 3, and the authors' vb_routing.py ----------------


def np_digamma(x):
    """psi(x) as the central difference of math.lgamma (float64; error ~1e-10)."""
    h = 1e-5
    return np.vectorize(lambda v: (math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h))(x)


def np_vb_routing(votes, acts, iterations, beta_a, beta_u, alpha0=1.0, kappa0=1.0, m0=0.0, psi0=1.0, nu0=None):
    """One example at a time: votes (batch, in, out, d), acts (batch, in) -> m (batch, out, d), logits, R."""
    batch, n_in, n_out, d = votes.shape
    nu0 = d + 1.0 if nu0 is None else nu0
    all_m, all_logits, all_r = [], [], []
    for v, a in zip(votes, acts):
        r = np.full((n_in, n_out), 1.0 / n_out)
        for t in range(iterations):
            ra = r * a[:, None]
            n = ra.sum(0)  # (out,)
            alpha, kappa, nu = alpha0 + n, kappa0 + n, nu0 + n
            xbar = np.einsum("io,iod->od", ra, v) / (n[:, None] + 1e-9)
            s = np.einsum("io,iod->od", ra, (v - xbar) ** 2)
            m = (n[:, None] * xbar + kappa0 * m0) / kappa[:, None]
            inv_psi = 1.0 / psi0 + s + (kappa0 * n / kappa)[:, None] * (xbar - m0) ** 2
            e_ln_pi = np_digamma(alpha) - np_digamma(alpha.sum())
            e_ln_lambda = (
                np.array([sum(np_digamma((nu[j] - h) / 2) for h in range(d)) for j in range(n_out)])
                + d * np.log(2)
                - np.log(inv_psi).sum(-1)
            )
            if t < iterations - 1:
                quad = d / kappa + nu * ((v - m) ** 2 / inv_psi).sum(-1)  # (in, out)
                log_rho = e_ln_pi + 0.5 * e_ln_lambda - 0.5 * d * np.log(2 * np.pi) - 0.5 * quad
                rho = np.exp(log_rho - log_rho.max(1, keepdims=True))
                r = rho / rho.sum(1, keepdims=True)
        entropy = 0.5 * d * np.log(2 * np.pi * np.e) - 0.5 * e_ln_lambda
        all_logits.append(beta_a - (np.exp(e_ln_pi) * entropy + beta_u))
        all_m.append(m)
        all_r.append(r)
    return np.stack(all_m), np.stack(all_logits), np.stack(all_r)


def np_vb_conv_routing(votes, acts, iterations, beta_a, beta_u, grid, k, s):
    """The code's convolutional layer (default priors): ``R`` normalised over every parent (position, type) of a child.

    votes (batch * P, K*K*T, O, d) and acts (batch * P, K*K*T) in ConvCaps' layout (positions row-major, children
    (kernel row, kernel column, type)) -> m (batch * P, O, d), logits (batch * P, O), R (batch * P, K*K*T, O). As
    vb_routing.py's update_qlatent: p = exp(log rho), summed over the parent types, folded onto the input grid
    (its conv_transpose2d: every parent position's share added at the child's position), read back per window
    (its unfold) and divided into p. R starts at 1 / O; the sums of the updates run over each window. The priors
    m0 = 0, kappa0 = 1, Psi0 = I are dropped as the code drops them. The code clamps the sum at 1e-11 (which sums
    of 4x4 poses' densities go below: R then sums to less than one) and exponentiates in float32; here, as in the
    library, R is the exact ratio.
    """
    height, width = grid
    out_h, out_w = (height - k) // s + 1, (width - k) // s + 1
    rows, n_in, n_out, d = votes.shape
    batch, types = rows // (out_h * out_w), n_in // (k * k)
    v = votes.reshape(batch, out_h, out_w, k, k, types, n_out, d)
    a = acts.reshape(batch, out_h, out_w, k, k, types)
    r = np.full(v.shape[:-1], 1.0 / n_out)
    for t in range(iterations):
        ra = r * a[..., None]
        n = ra.sum((3, 4, 5))  # (b, oh, ow, O)
        alpha, kappa, nu = 1.0 + n, 1.0 + n, d + 1.0 + n
        xbar = np.einsum("bhwxytj,bhwxytjd->bhwjd", ra, v) / n[..., None]
        scatter = np.einsum("bhwxytj,bhwxytjd->bhwjd", ra, (v - xbar[:, :, :, None, None, None]) ** 2)
        m = n[..., None] * xbar / kappa[..., None]
        inv_psi = 1.0 + scatter + (n / kappa)[..., None] * xbar**2
        e_ln_pi = np_digamma(alpha) - np_digamma(alpha.sum(-1, keepdims=True))
        e_ln_lambda = sum(np_digamma((nu - h) / 2) for h in range(d)) + d * np.log(2) - np.log(inv_psi).sum(-1)
        if t == iterations - 1:
            break
        quad = (d / kappa)[:, :, :, None, None, None] + nu[:, :, :, None, None, None] * (
            (v - m[:, :, :, None, None, None]) ** 2 / inv_psi[:, :, :, None, None, None]
        ).sum(-1)
        log_rho = e_ln_pi + 0.5 * e_ln_lambda - 0.5 * d * np.log(2 * np.pi)
        p = np.exp(log_rho[:, :, :, None, None, None] - 0.5 * quad)  # (b, oh, ow, kr, kc, t, O)
        folded = np.zeros((batch, height, width, types))
        for oh in range(out_h):
            for ow in range(out_w):
                folded[:, oh * s : oh * s + k, ow * s : ow * s + k] += p[:, oh, ow].sum(-1)
        total = np.stack(
            [np.stack([folded[:, oh * s : oh * s + k, ow * s : ow * s + k] for ow in range(out_w)], 1)
             for oh in range(out_h)], 1,
        )  # fmt: skip
        assert total.min() > 0  # no underflow in float64: R is the exact ratio (see the docstring)
        r = p / total[..., None]
    entropy = 0.5 * d * np.log(2 * np.pi * np.e) - 0.5 * e_ln_lambda
    logits = beta_a - (np.exp(e_ln_pi) * entropy + beta_u)
    return m.reshape(rows, n_out, d), logits.reshape(rows, n_out), r.reshape(rows, n_in, n_out)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def random_inputs(seed, shape=(3, 10, 4, 16), scale=1.0):
    rng = np.random.default_rng(seed)
    votes = (scale * rng.normal(size=shape)).astype("float32")
    return votes, rng.uniform(0.05, 1.0, size=shape[:2]).astype("float32")


def randomise_betas(router):
    rng = np.random.default_rng(11)
    router.beta_a.assign(rng.normal(size=router.beta_a.shape).astype("float32"))
    router.beta_u.assign(rng.normal(size=router.beta_u.shape).astype("float32"))


@pytest.mark.parametrize(
    "iterations, shape, priors",
    [
        (1, (2, 6, 3, 16), {}),
        (3, (2, 10, 4, 16), {}),
        (3, (2, 9, 5, 8), {"alpha0": 0.5, "kappa0": 2.0, "m0": 0.3, "psi0": 0.5, "nu0": 11.0}),
    ],
)
def test_matches_numpy_reference(iterations, shape, priors):
    votes, acts = random_inputs(iterations, shape, scale=2.0)
    router = VariationalBayesRouter(iterations=iterations, batch_norm=False, **priors)
    router.build(votes.shape)
    randomise_betas(router)
    m, logits, r = np_vb_routing(
        votes.astype("float64"), acts.astype("float64"), iterations,
        as_float64(router.beta_a), as_float64(router.beta_u), **priors,
    )  # fmt: skip
    assert_routes_like(router(votes, acts, return_coupling=True), (m, np_sigmoid(logits), r), rtol=1e-4, atol=1e-5)


def test_batch_norm_matches_numpy_reference():
    """Training: the batch's statistics per parent type (poses over batch and pose entries); moving ones updated."""
    votes, acts = random_inputs(4, (5, 8, 3, 16))
    router = VariationalBayesRouter(iterations=2)
    router.build(votes.shape)
    randomise_betas(router)
    m, logits, r = np_vb_routing(
        votes.astype("float64"), acts.astype("float64"), 2, as_float64(router.beta_a), as_float64(router.beta_u)
    )
    pose_mean, pose_var = m.mean(axis=(0, 2)), m.var(axis=(0, 2))
    logit_mean, logit_var = logits.mean(0), logits.var(0)
    expected_poses = (m - pose_mean[:, None]) / np.sqrt(pose_var[:, None] + 1e-5)
    expected_acts = np_sigmoid((logits - logit_mean) / np.sqrt(logit_var + 1e-5))
    outputs = router(votes, acts, training=True, return_coupling=True)
    assert_routes_like(outputs, (expected_poses, expected_acts, r), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(as_float64(router.pose_norm.moving_mean), 0.1 * pose_mean, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(as_float64(router.logit_norm.moving_mean), 0.1 * logit_mean, rtol=1e-4, atol=1e-6)


def test_digamma_matches_numpy_reference():
    x = np.array([0.5, 0.75, 1.0, 1.5, 3.0, 8.5, 17.0, 40.0, 1e3, 1e6], "float32")
    np.testing.assert_allclose(as_float64(digamma(keras.ops.convert_to_tensor(x))), np_digamma(x.astype("float64")),
                               rtol=1e-5, atol=1e-6)  # fmt: skip


def test_router_contract():
    """Inference before any training: the moving statistics are 0 and 1, so BN divides by sqrt(1 + 1e-5).

    Votes of scale 0.3 keep the posteriors near the prior: with 6 children in 16 dimensions and unit votes the
    responsibilities are sharp enough that float32 rounding differences between the eager call and the exported
    graph reach 3e-6, above the export check's 1e-6 (the references above take the sharp case).
    """
    votes, acts = random_inputs(7, (3, 6, 4, 16), scale=0.3)

    def reference(router, votes, activations):
        m, logits, r = np_vb_routing(votes, activations, 3, as_float64(router.beta_a), as_float64(router.beta_u))
        scale = 1 / np.sqrt(1 + 1e-5)
        return m * scale, np_sigmoid(logits * scale), r

    run_router_test(VariationalBayesRouter, {"iterations": 3}, votes, acts, reference, randomise_betas,
                    rtol=1e-4, atol=1e-5, dtypes=())  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("training", [False, True])
def test_finite_forward_and_gradients(dtype, training):
    """Small, ordinary, huge and dead inputs: finite outputs and finite vote and activation gradients."""
    big = 6e4 if dtype == "float16" else 3e38
    for scale, zero_acts in ((1e-6, False), (1.0, False), (big, False), (1.0, True)):
        votes, acts = random_inputs(5, (3, 6, 4, 16))
        votes = keras.ops.cast(votes * np.float32(scale / 4), dtype)
        acts = keras.ops.cast(np.zeros_like(acts) if zero_acts else acts, dtype)
        router = VariationalBayesRouter(dtype=dtype)
        if not training:
            assert_routes_finitely(router, votes, acts, gradient_of=lambda outputs: outputs)
            continue
        # Training updates the BatchNorms' moving statistics; input_gradient keeps them out of JAX's traced gradients.
        assert_routes_finitely(router, votes, acts, training=True)
        assert_finite(input_gradient(lambda v: router(v, acts, training=True), votes), "votes gradient")
        assert_finite(input_gradient(lambda a: router(votes, a, training=True), acts), "activations gradient")


def test_parent_major_votes_route_alike():
    votes, acts = random_inputs(8, (2, 7, 3, 16))
    router = VariationalBayesRouter()
    child = router(votes, acts, return_coupling=True)
    parent = router(np.transpose(votes, (0, 2, 1, 3)), acts, return_coupling=True, votes_layout="parent_major")
    assert_routes_like(parent, [as_float64(x) for x in child], rtol=1e-6, atol=1e-6)


def test_registered_with_capabilities():
    assert "variational_bayes" in routing.available(pose="matrix")
    assert "variational_bayes" in routing.available(pose="vector")
    assert isinstance(routing.get("variational_bayes", iterations=2), VariationalBayesRouter)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"alpha0": 0.0}, r"VariationalBayesRouter.*alpha0.*positive float.*0\.0"),
        ({"psi0": -1.0}, r"VariationalBayesRouter.*psi0.*positive float"),
        ({"m0": float("nan")}, r"VariationalBayesRouter.*m0.*finite float"),
        ({"batch_norm": "yes"}, r"VariationalBayesRouter.*batch_norm.*True or False"),
        ({"jit_compile": True}, r"VariationalBayesRouter.*jit_compile.*batch_norm"),
    ],
)
def test_rejects_bad_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        VariationalBayesRouter(**kwargs)


def test_rejects_nu0_below_pose_size():
    with pytest.raises(ValueError, match=r"VariationalBayesRouter.*nu0.*above d - 1 = 15.*14"):
        VariationalBayesRouter(nu0=14.0)(np.zeros((2, 3, 2, 16), "float32"))


def test_input_gradient_reaches_votes():
    votes, acts = random_inputs(9, (2, 5, 3, 16))
    grad = input_gradient(lambda v: keras.ops.sum(VariationalBayesRouter()(v, acts)[1]), votes)
    assert_finite(grad)
    assert np.abs(grad).max() > 0


# ---- child_grid: a child normalised over every parent position and type it feeds (the code's conv layers) ----------


def conv_inputs(seed, grid, k, s, types=2, out_caps=3, batch=2, d=16, scale=0.5):
    """Votes ``(batch * P, K*K*types, out_caps, d)`` and activations in ConvCaps' layout for a VALID layer."""
    positions = ((grid[0] - k) // s + 1) * ((grid[1] - k) // s + 1)
    return random_inputs(seed, (batch * positions, k * k * types, out_caps, d), scale=scale)


@pytest.mark.parametrize("grid, strides, batch_norm", [((4, 4), 1, False), ((5, 5), 2, True)])
def test_child_grid_matches_numpy_reference_of_the_codes_fold(grid, strides, batch_norm):
    """4x4 children, K=3, stride 1 (2x2 parents; a centre child feeds all four) and 5x5, stride 2 (shared edges),
    2 child types, 3 parent types, 4x4 poses; with batch_norm in training the statistics run over every position."""
    votes, acts = conv_inputs(21, grid, 3, strides)
    router = VariationalBayesRouter(
        iterations=3, batch_norm=batch_norm, child_grid=grid, kernel_size=3, strides=strides
    )  # fmt: skip
    router.build(votes.shape)
    randomise_betas(router)
    m, logits, r = np_vb_conv_routing(
        votes.astype("float64"), acts.astype("float64"), 3,
        as_float64(router.beta_a), as_float64(router.beta_u), grid, 3, strides,
    )  # fmt: skip
    if batch_norm:
        m = (m - m.mean(axis=(0, 2))[:, None]) / np.sqrt(m.var(axis=(0, 2))[:, None] + 1e-5)
        logits = (logits - logits.mean(0)) / np.sqrt(logits.var(0) + 1e-5)
    outputs = router(votes, acts, training=batch_norm, return_coupling=True)
    # the norms divide by the batch's standard deviations, which scales float32 rounding up: 1e-4 with them
    tolerance = 1e-4 if batch_norm else 1e-5
    assert_routes_like(outputs, (m, np_sigmoid(logits), r), rtol=tolerance, atol=tolerance)
    # the reference's R differs from a per-position softmax: rows alone do not sum to one
    assert not np.allclose(r.sum(-1), 1.0, atol=1e-3)


def test_child_grid_with_one_parent_position_per_child_is_per_position_routing():
    """K=2, stride 2 on a 4x4 grid: windows do not overlap, so the cross-position sum is the per-position one."""
    votes, acts = conv_inputs(22, (4, 4), 2, 2)
    plain = VariationalBayesRouter(batch_norm=False)
    spatial = VariationalBayesRouter(batch_norm=False, child_grid=(4, 4), kernel_size=2, strides=2)
    expected = [as_float64(x) for x in plain(votes, acts, return_coupling=True)]
    assert_routes_like(spatial(votes, acts, return_coupling=True), expected, rtol=1e-5, atol=1e-6)


def test_child_grid_config_round_trip():
    router = VariationalBayesRouter(iterations=2, child_grid=[5, 4], kernel_size=3, strides=2, padding="same")
    config = router.get_config()
    assert (config["child_grid"], config["kernel_size"], config["strides"], config["padding"]) == ([5, 4], 3, 2, "same")
    clone = VariationalBayesRouter.from_config(config)
    assert (clone.child_grid, clone.kernel_size, clone.strides, clone.padding) == ((5, 4), 3, 2, "same")
    assert clone.get_config() == config
    assert VariationalBayesRouter().get_config()["child_grid"] is None
    assert "variational_bayes" in routing.available(child_grid=True)


def test_child_grid_inside_conv_caps():
    """The layer routes the whole vote tensor (no chunked path) in training and at inference; saving and export."""
    router = {"name": "variational_bayes", "iterations": 2, "child_grid": [5, 5], "kernel_size": 3, "strides": 2}
    rng = np.random.default_rng(23)
    grid = (rng.normal(size=(3, 5, 5, 2, 16)).astype("float32"), rng.uniform(size=(3, 5, 5, 2)).astype("float32"))
    kwargs = {"num_capsules": 3, "kernel_size": 3, "strides": 2, "transform": "matrix", "router": router}
    layer = ConvCaps(**kwargs)
    layer(grid)
    assert not layer.routes_across_positions()
    assert layer.row_chunks(training=True) == layer.row_chunks(training=False) == [(0, 2)]
    grad = input_gradient(lambda poses: layer((poses, grid[1]), training=True)[1], grid[0])
    assert_finite(grad)
    assert np.abs(grad).max() > 0
    run_layer_test(ConvCaps, kwargs, grid, expected_output_shapes=[(3, 2, 2, 3, 16), (3, 2, 2, 3)])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"child_grid": (4, 4, 4)}, r"VariationalBayesRouter.*child_grid.*None or a pair \(H, W\).*\(4, 4, 4\)"),
        ({"child_grid": 4}, r"VariationalBayesRouter.*child_grid.*None or a pair"),
        ({"child_grid": (4, 0)}, r"VariationalBayesRouter.*child_grid.*integer >= 1.*0"),
        ({"kernel_size": 0}, r"VariationalBayesRouter.*kernel_size.*integer >= 1.*0"),
        ({"padding": "full"}, r"VariationalBayesRouter.*padding.*'full'"),
    ],
)
def test_child_grid_rejects_bad_geometry(kwargs, match):
    with pytest.raises(ValueError, match=match):
        VariationalBayesRouter(**kwargs)


def test_child_grid_rejects_votes_not_in_whole_receptive_fields():
    router = VariationalBayesRouter(child_grid=(4, 4), kernel_size=3)
    with pytest.raises(ValueError, match=r"VariationalBayesRouter.*votes.*divisible by kernel_size\*\*2 = 9.*10"):
        router(np.zeros((4, 10, 3, 16), "float32"))
