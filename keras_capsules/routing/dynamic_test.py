import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.routing import DynamicRouter
from keras_capsules.testing import (
    assert_routes_finitely,
    assert_routes_like,
    assert_training_vote_gradient,
    input_gradient,
    run_router_test,
)


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_squash(s, eps=1e-7):
    q = (s**2).sum(-1, keepdims=True)
    return s * q / (1 + q) / np.sqrt(q + eps)


def np_dynamic_routing(votes, iterations, bias=0.0, leaky=False):
    """Sabour et al. (2017), Procedure 1, written from the paper."""
    b = np.zeros(votes.shape[:3])
    for r in range(iterations):
        logits = b
        if leaky:
            logits = np.concatenate([np.zeros(b.shape[:2] + (1,)), b], axis=2)
        c = np_softmax(logits, axis=2)[:, :, (1 if leaky else 0) :]
        s = (c[..., None] * votes).sum(axis=1) + bias
        v = np_squash(s)
        if r < iterations - 1:
            b = b + (votes * v[:, None]).sum(-1)
    return v, c


@pytest.mark.parametrize("iterations", [1, 2, 3, 5])
def test_matches_numpy_reference(iterations):
    votes = np.random.default_rng(1).normal(size=(3, 6, 4, 5)).astype("float32")
    router = DynamicRouter(iterations=iterations, use_bias=True)
    expected, expected_c = np_dynamic_routing(votes.astype("float64"), iterations, bias=0.1)
    assert_routes_like(router(votes, return_coupling=True), (expected, np.linalg.norm(expected, axis=-1), expected_c))


def test_first_iteration_is_uniform_and_coupling_sums_to_one():
    votes = np.random.default_rng(2).normal(size=(2, 7, 3, 4)).astype("float32")
    _, _, c1 = DynamicRouter(iterations=1, use_bias=False)(votes, return_coupling=True)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(c1), np.full((2, 7, 3), 1 / 3), rtol=1e-6)
    _, _, c3 = DynamicRouter(iterations=3)(votes, return_coupling=True)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(c3).sum(-1), 1.0, rtol=1e-5)


def test_leaky_routing_matches_reference():
    votes = np.random.default_rng(3).normal(size=(2, 5, 3, 4)).astype("float32")
    outputs = DynamicRouter(iterations=3, use_bias=False, leaky=True)(votes, return_coupling=True)
    expected, expected_c = np_dynamic_routing(votes.astype("float64"), 3, leaky=True)
    assert_routes_like(outputs, (expected, None, expected_c))
    assert np.all(keras.ops.convert_to_numpy(outputs[2]).sum(-1) < 1.0)


def test_stop_gradient_inner_changes_gradients_not_values():
    votes = np.random.default_rng(4).normal(size=(2, 5, 3, 4)).astype("float32")
    a = DynamicRouter(iterations=3, use_bias=False)
    b = DynamicRouter(iterations=3, use_bias=False, stop_gradient_inner=True)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(a(votes)[0]), keras.ops.convert_to_numpy(b(votes)[0]), rtol=1e-6
    )


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("scale", [0.0, 1.0, 1e3])
def test_finite_for_zero_and_large_votes(dtype, scale):
    votes = keras.ops.cast(np.random.default_rng(5).normal(size=(2, 6, 3, 4)) * scale, dtype)
    assert_routes_finitely(DynamicRouter(iterations=3, dtype=dtype), votes)


@pytest.mark.parametrize("stop_gradient_inner", [False, True])
def test_gradients_are_finite_at_zero_votes(stop_gradient_inner):
    router = DynamicRouter(iterations=3, stop_gradient_inner=stop_gradient_inner)
    grads = input_gradient(lambda v: router(v)[0], np.zeros((2, 4, 3, 5), "float32"))
    assert np.all(np.isfinite(grads))


def test_quantized_coupling_at_inference_only():
    votes = np.random.default_rng(6).normal(size=(2, 6, 4, 3)).astype("float32")
    router = DynamicRouter(iterations=3, quantize_levels=11)
    _, _, c_train = router(votes, training=True, return_coupling=True)
    _, _, c_test = router(votes, training=False, return_coupling=True)
    c_test = keras.ops.convert_to_numpy(c_test)
    np.testing.assert_allclose(c_test * 10, np.round(c_test * 10), atol=1e-5)
    np.testing.assert_allclose(np.round(keras.ops.convert_to_numpy(c_train) * 10) / 10, c_test, atol=1e-5)


def test_router_contract():
    """Float16/bfloat16 are checked over three magnitudes by test_finite_for_zero_and_large_votes."""
    votes = np.random.default_rng(7).normal(size=(3, 6, 4, 5)).astype("float32")

    def reference(router, votes, activations):
        poses, coupling = np_dynamic_routing(votes, 4, bias=0.1)  # the bias starts at 0.1
        return poses, np.linalg.norm(poses, axis=-1), coupling

    router = run_router_test(DynamicRouter, {"iterations": 4}, votes, reference=reference, dtypes=())
    assert router.iterations == 4


def test_registry_and_errors():
    with pytest.raises(ValueError, match="'nope'"):
        routing.get("nope")
    with pytest.raises(TypeError, match="router"):
        routing.get(3)
    with pytest.raises(ValueError, match="iterations"):
        DynamicRouter(iterations=0)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_training_call_matches_numpy_compiled_or_not(jit_compile):
    votes = np.random.default_rng(11).normal(size=(2, 6, 3, 4)).astype("float32")
    router = DynamicRouter(iterations=3, jit_compile=jit_compile)
    router.build(votes.shape)
    assert router.compiles(True) == (jit_compile and keras.backend.backend() == "tensorflow")
    assert not router.compiles(False)

    def reference(v):
        poses = np_dynamic_routing(v, 3, bias=0.1)[0]
        return poses, np.linalg.norm(poses, axis=-1)

    expected, _ = reference(votes.astype("float64"))
    poses = keras.ops.convert_to_numpy(router(votes, training=True)[0])
    np.testing.assert_allclose(poses, expected, rtol=1e-4, atol=1e-5)
    assert_training_vote_gradient(router, reference, votes, None)


def test_jit_compile_is_checked_and_serialised():
    with pytest.raises(TypeError, match="jit_compile"):
        DynamicRouter(jit_compile="yes")
    config = DynamicRouter(jit_compile=False).get_config()
    assert config["jit_compile"] is False and DynamicRouter.from_config(config).jit_compile is False
