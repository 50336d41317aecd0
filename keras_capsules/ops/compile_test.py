import keras
import numpy as np
import pytest

from keras_capsules.ops.compile import compiled_reading
from keras_capsules.ops.remat import remat_reading
from keras_capsules.ops.sequential import map_in_turn


def _dense():
    layer = keras.layers.Dense(3, activation="tanh")
    layer.build((None, 4))
    layer.kernel.assign(np.arange(12, dtype="float32").reshape(4, 3) / 10.0 - 0.5)
    layer.bias.assign(np.array([0.1, -0.2, 0.3], "float32"))
    return layer


def _numpy_dense(x, w, b):
    return np.tanh(x @ w + b)


def test_values_equal_the_plain_function_and_numpy():
    layer = _dense()
    x = np.random.default_rng(0).normal(size=(5, 4)).astype("float32")
    got = keras.ops.convert_to_numpy(compiled_reading(layer, layer.weights)(x))
    w, b = (keras.ops.convert_to_numpy(v) for v in layer.weights)
    np.testing.assert_allclose(got, _numpy_dense(x.astype("float64"), w, b), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="compiled_reading compiles only on TensorFlow; elsewhere it returns the function itself, whose "
    "rematerialised loop gradients remat_test checks on every backend",
)
def test_weight_gradients_inside_a_rematerialised_loop_as_conv_caps_routes():
    """The layout ConvCaps trains with: rows through map_in_turn, each rematerialised, the router compiled inside."""
    import tensorflow as tf

    layer = _dense()
    rows = tf.constant(np.random.default_rng(1).normal(size=(3, 5, 4)).astype("float32"))
    step = remat_reading(compiled_reading(layer, layer.weights), layer.weights)

    @tf.function
    def loss_and_gradients():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(map_in_turn(step, rows) ** 2)
        return loss, tape.gradient(loss, layer.trainable_weights)

    loss, (d_kernel, d_bias) = loss_and_gradients()
    w, b = (keras.ops.convert_to_numpy(v).astype("float64") for v in layer.weights)
    x = rows.numpy().reshape(-1, 4).astype("float64")
    y = _numpy_dense(x, w, b)
    upstream = 2 * y * (1 - y**2)  # d(sum y^2)/d(pre-activation)
    np.testing.assert_allclose(loss.numpy(), (y**2).sum(), rtol=1e-5)
    np.testing.assert_allclose(d_kernel.numpy(), x.T @ upstream, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(d_bias.numpy(), upstream.sum(0), rtol=1e-4, atol=1e-5)


def test_compiled_inference_is_off_outside_its_scope_and_scopes_nest():
    from keras_capsules.ops.compile import compiled_inference, compiling_inference

    assert not compiling_inference()
    with compiled_inference():
        assert compiling_inference()
        with compiled_inference(False):
            assert not compiling_inference()
        assert compiling_inference()
    assert not compiling_inference()


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="router compilation is TensorFlow's (jit_compile)")
def test_router_compilation_off_overrides_jit_compile_and_compiled_inference():
    from keras_capsules.ops.compile import compiled_inference, router_compilation
    from keras_capsules.routing import KernelRouter

    router = KernelRouter(jit_compile=True)
    assert router.compiles(True)
    with router_compilation(False), compiled_inference():
        assert not router.compiles(True) and not router.compiles(False)
    assert router.compiles(True) and not router.compiles(False)
