import keras
import numpy as np
import pytest

from keras_capsules.routing import KernelRouter
from keras_capsules.testing import (
    as_float64,
    assert_finite,
    assert_registry_round_trip,
    assert_routes_finitely,
    assert_routes_like,
    assert_training_vote_gradient,
    assert_training_weight_gradient,
    run_router_test,
)

SHAPE = (3, 6, 4, 5)  # (batch, in_caps, out_caps, dim)


def randomise(router, seed=0):
    """Gives every router weight a random, non-default value (so the reference test sees them all)."""
    rng = np.random.default_rng(seed)
    for weight in router.weights:
        value = rng.normal(size=weight.shape) * 0.5
        if weight.name in ("lambda1", "lambda2"):
            value = value * 4.0  # signed: the router must take abs()
        weight.assign(value.astype("float32"))


def params(router):
    return {w.name: as_float64(w) for w in router.weights}


def np_kernel(p, kind, mu, v):
    """K(mu_j, v_j|i) of the inner-consensus paper's eq. 15, one mixture component at a time: (b, i, o)."""
    logits = p["mixture_logits"]
    pi = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    tau = mu[:, None] - v
    total = np.zeros(v.shape[:3])
    for q in range(len(pi)):
        if kind == "spectral_mixture":
            m, nu = p["frequencies"][q], np.abs(p["bandwidths"][q])
            k = (np.exp(-2 * np.pi**2 * tau**2 * nu) * np.cos(2 * np.pi * tau * m)).sum(-1)
        else:
            ell = np.abs(p["length_scales"][q]) + 1e-3
            k = np.exp(-(tau**2).sum(-1) / (2 * ell**2))
        total += pi[q] * k
    return total


def np_kernel_routing(votes, acts, p, iterations, kind="spectral_mixture", activation="sigmoid", prior=True):
    """The inner-consensus paper's similarity routing (docs/reference/routers.md#kernel-routing) with the plain power/exp/normalise form."""
    b, n, o, _ = votes.shape
    lam1, lam2 = np.abs(p["lambda1"]), np.abs(p["lambda2"])
    lam = lam1 + lam2 + 1e-6
    c = np.full((b, n, o), 1.0 / n)
    mu = (c[..., None] * votes).sum(1)
    for _ in range(iterations):
        k = np_kernel(p, kind, mu, votes)
        r = (acts[:, :, None] + 0.1) ** (lam2 / lam) * np.exp(k / lam)
        c = r / r.sum(axis=1, keepdims=True)
        mu = (c[..., None] * votes).sum(1) / c.sum(1)[..., None]
    logit = p["theta1"] * (c * k).sum(1) + p["theta2"]
    if prior:
        logit = logit + np.abs(p["theta3"]) * (c * np.log(acts[:, :, None] + 1e-6)).sum(1)
    out = 1 / (1 + np.exp(-logit)) if activation == "sigmoid" else logit
    return mu, out, c


def data(seed=0, shape=SHAPE):
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape).astype("float32"), rng.uniform(size=shape[:2]).astype("float32")


@pytest.mark.parametrize("iterations", [1, 3])
@pytest.mark.parametrize("kind", ["spectral_mixture", "gaussian_mixture"])
def test_matches_numpy_reference(iterations, kind):
    votes, acts = data(1)
    router = KernelRouter(iterations=iterations, kernel=kind, num_components=3)
    router(votes, acts)
    randomise(router, seed=iterations)
    expected = np_kernel_routing(votes.astype("float64"), acts.astype("float64"), params(router), iterations, kind)
    assert_routes_like(router(votes, acts, return_coupling=True), expected, atol=(1e-5, 1e-5, 1e-6))


@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.parametrize("kind", ["spectral_mixture", "gaussian_mixture"])
def test_training_gradient_matches_numpy_reference(kind, jit_compile):
    """Training rematerialises the kernel (and with ``jit_compile``, on TensorFlow, runs through XLA with the
    polynomial cosine, six components as chunks of four and two): same outputs, and vote gradients equal to the
    reference's finite differences."""
    votes, acts = data(4, shape=(2, 5, 3, 4))
    router = KernelRouter(iterations=2, kernel=kind, num_components=6, jit_compile=jit_compile)
    router(votes, acts)
    randomise(router, seed=7)
    p = params(router)
    expected = np_kernel_routing(votes.astype("float64"), acts.astype("float64"), p, 2, kind)
    assert_routes_like(router(votes, acts, training=True), expected[:2])
    assert_training_vote_gradient(
        router, lambda v: np_kernel_routing(v, acts.astype("float64"), p, 2, kind)[:2], votes, acts
    )


@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.parametrize("name", ["frequencies", "bandwidths", "mixture_logits"])
def test_training_weight_gradient_matches_numpy_reference(name, jit_compile):
    """The spectral mixture's weights get the reference's gradients in training (their sums over children
    and parents run through ``broadcast_rows`` and, compiled, the polynomial cosine's own gradient and the
    components in chunks of four and two)."""
    votes, acts = data(5, shape=(2, 5, 3, 4))
    router = KernelRouter(iterations=2, num_components=6, jit_compile=jit_compile)
    router(votes, acts)
    randomise(router, seed=9)
    p = params(router)

    def reference(value):
        return np_kernel_routing(votes.astype("float64"), acts.astype("float64"), {**p, name: value}, 2)[:2]

    assert_training_weight_gradient(router, name, reference, votes, acts)


@pytest.mark.parametrize("activation, prior", [("linear", True), ("linear", False), ("sigmoid", False)])
def test_activation_variants(activation, prior):
    votes, acts = data(2)
    router = KernelRouter(activation=activation, activation_prior=prior)
    router(votes, acts)
    randomise(router, seed=5)
    _, expected, _ = np_kernel_routing(
        votes.astype("float64"), acts.astype("float64"), params(router), 3, activation=activation, prior=prior
    )
    assert_routes_like(router(votes, acts), (None, expected))


def test_coupling_is_a_distribution_over_inputs_and_default_initialisation():
    votes, acts = data(3)
    router = KernelRouter(num_components=4)
    _, out, coupling = router(votes, acts, return_coupling=True)
    np.testing.assert_allclose(as_float64(coupling).sum(axis=1), 1.0, rtol=1e-5)
    assert np.all((as_float64(out) > 0) & (as_float64(out) < 1))
    np.testing.assert_allclose(as_float64(router.lambda1), 12.0, atol=0.3)
    np.testing.assert_allclose(as_float64(router.lambda2), 1.0)
    np.testing.assert_allclose(as_float64(router.theta2), 1.0)
    np.testing.assert_allclose(as_float64(router.mixture_logits), 1.0)
    assert np.all(np.abs(as_float64(router.frequencies)) <= 0.2 + 1e-6)
    assert not np.allclose(as_float64(router.frequencies), as_float64(router.bandwidths))
    assert not np.allclose(as_float64(router.theta1), as_float64(router.theta3))
    # 4 mixture logits + 2 x 4 x 5 kernel parameters + 5 x 4 per-channel parameters
    assert sum(int(np.prod(w.shape)) for w in router.trainable_weights) == 4 + 40 + 20


def test_gaussian_length_scales_start_an_octave_apart():
    router = KernelRouter(kernel="gaussian_mixture", num_components=3)
    router.build(SHAPE)
    np.testing.assert_allclose(as_float64(router.length_scales), [0.5, 1.0, 2.0])


def test_activations_default_to_ones_and_strong_child_dominates():
    votes, _ = data(4)
    a, _ = KernelRouter()(votes)
    b, _ = KernelRouter()(votes, np.ones(SHAPE[:2], "float32"))
    assert a.shape == b.shape
    # Identical votes: equal kernel values, so the activation prior alone decides the coupling,
    # c_0 / c_i = ((1 + 0.1) / (0 + 0.1)) ** (l2 / l) = 11 with l1 = 0.
    same = np.repeat(votes[:, :1], SHAPE[1], axis=1)
    acts = np.zeros(SHAPE[:2], "float32")
    acts[:, 0] = 1.0
    router = KernelRouter(iterations=2)
    router(same, acts)
    router.lambda1.assign(np.zeros(SHAPE[2], "float32"))
    _, _, c = router(same, acts, return_coupling=True)
    np.testing.assert_allclose(as_float64(c)[:, 0], 11 / (11 + SHAPE[1] - 1), rtol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("magnitude", ["zero", "unit", "huge"])
@pytest.mark.parametrize("kind", ["spectral_mixture", "gaussian_mixture"])
def test_finite_forward_and_gradient(dtype, magnitude, kind):
    votes, acts = _finite_test_inputs(dtype, magnitude)
    assert_routes_finitely(KernelRouter(kernel=kind, dtype=dtype), votes, acts, gradient_of=lambda outputs: outputs[1])


def _finite_test_inputs(dtype, magnitude):
    huge = 6e4 if dtype == "float16" else 1e30
    scale = {"zero": 0.0, "unit": 1.0, "huge": huge}[magnitude]
    rng = np.random.default_rng(6)
    votes = keras.ops.cast(rng.uniform(-1, 1, size=SHAPE) * scale, dtype)
    acts = keras.ops.cast(rng.uniform(size=SHAPE[:2]) * (scale > 0), dtype)  # all-zero activations with zero votes
    return votes, acts


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_finite_in_training(dtype):
    """Training (compiled on TensorFlow and JAX), six mixture components in chunks of four and two: the three
    magnitudes as one batch (examples route independently), so the router compiles once."""
    votes, acts = zip(*(_finite_test_inputs(dtype, magnitude) for magnitude in ("zero", "unit", "huge")))
    votes, acts = keras.ops.concatenate(votes, axis=0), keras.ops.concatenate(acts, axis=0)
    router = KernelRouter(num_components=6, dtype=dtype)
    assert_routes_finitely(router, votes, acts, training=True, gradient_of=lambda outputs: outputs[1])


def test_negative_bandwidth_cannot_overflow():
    votes, acts = data(7)
    router = KernelRouter()
    router(votes * 1e3, acts)
    router.bandwidths.assign(-np.ones(router.bandwidths.shape, "float32"))
    assert_finite(router(votes * 1e3, acts, return_coupling=True))


def test_in_conv_capsules_with_activations():
    from keras_capsules.layers import ConvCaps

    rng = np.random.default_rng(8)
    poses = rng.normal(size=(2, 4, 4, 2, 16)).astype("float32")
    acts = rng.uniform(size=(2, 4, 4, 2)).astype("float32")
    out_poses, out_acts, c = ConvCaps(3, kernel_size=3, router="kernel", transform="matrix")(
        (poses, acts), return_coupling=True
    )
    assert tuple(out_poses.shape) == (2, 2, 2, 3, 16) and tuple(out_acts.shape) == (2, 2, 2, 3)
    np.testing.assert_allclose(as_float64(c).sum(axis=1), 1.0, rtol=1e-5)


def test_router_contract():
    """Float16/bfloat16 are checked over three magnitudes by test_finite_forward_and_gradient."""
    votes, acts = data(9, shape=(4, 5, 3, 4))

    def reference(router, votes, activations):
        return np_kernel_routing(votes, activations, params(router), 3, "gaussian_mixture")

    init = {"num_components": 2, "kernel": "gaussian_mixture"}
    run_router_test(KernelRouter, init, votes, acts, reference, randomise, atol=(1e-5, 1e-5, 1e-6), dtypes=())


def test_registry_round_trip_keeps_the_initializers():
    router = assert_registry_round_trip("kernel", num_components=10, activation="linear", theta_initializer="zeros")
    router.build(SHAPE)
    np.testing.assert_allclose(as_float64(router.theta1), 0.0)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"kernel": "rbf"}, ValueError, "kernel"),
        ({"num_components": 0}, ValueError, "num_components"),
        ({"num_components": 2.5}, TypeError, "num_components"),
        ({"activation": "tanh"}, ValueError, "activation"),
        ({"prior_offset": 0.0}, ValueError, "prior_offset"),
        ({"iterations": 0}, ValueError, "iterations"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        KernelRouter(**kwargs)
