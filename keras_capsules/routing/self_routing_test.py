import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.routing import SelfRoutingRouter
from keras_capsules.testing import assert_routes_finitely, assert_routes_like, run_router_test


def np_self_routing(votes, activations, kernel, bias):
    """Hahn et al. (2019), equations 1-4 with the official code's activation, logits read from the votes."""
    logits = np.einsum("biod,iod->bio", votes, kernel) + bias
    e = np.exp(logits - logits.max(axis=2, keepdims=True))
    c = e / e.sum(axis=2, keepdims=True)
    ac = activations[:, :, None] * c
    a_out = ac.sum(axis=1) / activations.sum(axis=1, keepdims=True)
    poses = np.einsum("bio,biod->bod", ac / ac.sum(axis=1, keepdims=True), votes)
    return poses, a_out, c


def randomize(router):
    rng = np.random.default_rng(7)
    router.routing_kernel.assign(rng.normal(size=router.routing_kernel.shape).astype("float32"))
    router.routing_bias.assign(rng.normal(size=router.routing_bias.shape).astype("float32"))


def reference(router, votes, activations):
    activations = np.ones(votes.shape[:2]) if activations is None else activations
    kernel = keras.ops.convert_to_numpy(router.routing_kernel).astype("float64")
    bias = keras.ops.convert_to_numpy(router.routing_bias).astype("float64")
    return np_self_routing(votes, activations, kernel, bias)


def test_matches_numpy_reference():
    rng = np.random.default_rng(1)
    votes = rng.normal(size=(3, 7, 4, 5)).astype("float32")
    activations = rng.uniform(0.05, 0.95, size=(3, 7)).astype("float32")
    router = SelfRoutingRouter()
    router.build(votes.shape)
    randomize(router)
    expected = reference(router, votes.astype("float64"), activations.astype("float64"))
    assert_routes_like(router(votes, activations, return_coupling=True), expected, rtol=1e-4, atol=1e-5)


def test_contract_numpy_reference_and_saving():
    rng = np.random.default_rng(2)
    votes = rng.normal(size=(3, 6, 3, 4)).astype("float32")
    activations = rng.uniform(size=(3, 6)).astype("float32")
    run_router_test(
        SelfRoutingRouter,
        {"kernel_initializer": "glorot_uniform"},
        votes,
        activations,
        reference=reference,
        initialize=randomize,
    )


def test_zero_weights_numpy_uniform_coupling_and_zero_activations():
    votes = np.random.default_rng(3).normal(size=(2, 5, 3, 4)).astype("float32")
    router = SelfRoutingRouter()
    poses, acts, coupling = router(votes, return_coupling=True)
    assert [tuple(w.shape) for w in router.weights] == [(5, 3, 4), (5, 3)]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(coupling), 1 / 3, rtol=1e-6)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(acts), 1 / 3, rtol=1e-6)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(poses), votes.mean(axis=1), rtol=1e-5, atol=1e-6)
    poses, acts = router(votes, np.zeros((2, 5), "float32"))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(poses), 0.0)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(acts), 0.0)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("scale", [0.0, 1e4, 1e38])
def test_finite_for_zero_and_large_votes(dtype, scale):
    rng = np.random.default_rng(4)
    largest = 6e4 if dtype == "float16" else 3e38  # finite input in every dtype
    votes = keras.ops.cast(np.clip(rng.normal(size=(2, 6, 3, 4)) * scale, -largest, largest), dtype)
    activations = keras.ops.cast(rng.uniform(size=(2, 6)), dtype)
    router = SelfRoutingRouter(kernel_initializer="glorot_uniform", bias_initializer="ones", dtype=dtype)
    gradient_of = (lambda outputs: outputs[0] + outputs[1][..., None]) if scale <= 1e4 else None
    assert_routes_finitely(router, votes, activations, gradient_of=gradient_of)


def test_registered_with_capabilities():
    assert isinstance(routing.get("self_routing"), SelfRoutingRouter)
    assert "self_routing" in routing.available(iterative=False, pose="matrix")
    assert "self_routing" in routing.available(pose="vector")


def test_errors():
    with pytest.raises(ValueError, match=r"SelfRoutingRouter.*iterations.*1.*3"):
        SelfRoutingRouter(iterations=3)
    with pytest.raises(ValueError, match=r"SelfRoutingRouter.*votes.*in_caps"):
        SelfRoutingRouter().build((None, None, 3, 4))
