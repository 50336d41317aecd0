import keras
import numpy as np
import pytest

from keras_capsules.ops.trig import polynomial_cos


def test_polynomial_cos_matches_numpy_over_many_turns():
    x = np.concatenate([np.linspace(-1e4, 1e4, 200_001), np.linspace(-7.0, 7.0, 10_001), [0.0, np.pi, -np.pi]])
    x = x.astype("float32")
    got = keras.ops.convert_to_numpy(polynomial_cos(keras.ops.convert_to_tensor(x)))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.cos(x.astype("float64")), rtol=0, atol=5e-7)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="compiles with tf.function(jit_compile=True)")
def test_polynomial_cos_and_its_gradient_under_xla():
    import tensorflow as tf

    x = tf.constant(np.linspace(-20.0, 20.0, 4001).astype("float32"))

    @tf.function(jit_compile=True)
    def value_and_gradient(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = polynomial_cos(v)
        return y, tape.gradient(y, v)

    y, dy = value_and_gradient(x)
    np.testing.assert_allclose(y.numpy(), np.cos(x.numpy().astype("float64")), atol=5e-7)
    # the custom gradient: -sin(x) by the same polynomial
    np.testing.assert_allclose(dy.numpy(), -np.sin(x.numpy().astype("float64")), atol=2e-6)


def test_polynomial_cos_gradient_is_minus_sine_on_every_backend():
    from keras_capsules.testing import input_gradient

    x = np.linspace(-50.0, 50.0, 2001).astype("float32")
    np.testing.assert_allclose(input_gradient(polynomial_cos, x), -np.sin(x.astype("float64")), atol=2e-6)


def test_polynomial_cos_stays_bounded_for_any_finite_input():
    x = np.array([1e7, -3e9, 6e11, 1e20, 3.4e38, -3.4e38], dtype="float32")
    got = keras.ops.convert_to_numpy(polynomial_cos(keras.ops.convert_to_tensor(x)))
    assert np.all(np.abs(got) <= 1.0 + 1e-6), got
