"""remat_reading: a rematerialised function that reads Keras variables, inside a loop's gradient."""

import keras
import numpy as np

from keras_capsules.ops.remat import recomputation, recomputing, remat_reading
from keras_capsules.ops.sequential import map_in_turn


def _value_and_gradients(function, weight, x):
    """``sum(function(x))`` and its gradients with respect to ``x`` and ``weight``, as one compiled program (as in ``fit``)."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        x = tf.Variable(x)

        @tf.function
        def run():
            with tf.GradientTape() as tape:
                total = keras.ops.sum(function(x))
            return total, tape.gradient(total, [x, weight.value])

        total, (grad_x, grad_w) = run()
        return float(total), np.asarray(grad_x), np.asarray(grad_w)
    if keras.backend.backend() == "torch":
        import torch

        x = keras.ops.convert_to_tensor(x).requires_grad_()  # on the backend's device, as the weight
        total = keras.ops.sum(function(x))
        grad_x, grad_w = torch.autograd.grad(total, [x, weight.value])
        return float(total.detach()), keras.ops.convert_to_numpy(grad_x), keras.ops.convert_to_numpy(grad_w)
    import jax

    def pure(values, weight_value):
        with keras.StatelessScope(state_mapping=[(weight, weight_value)]):
            return keras.ops.sum(function(values))

    total, (grad_x, grad_w) = jax.jit(jax.value_and_grad(pure, argnums=(0, 1)))(x, weight.value)
    return float(total), np.asarray(grad_x), np.asarray(grad_w)


def test_a_rematerialised_row_function_reading_a_variable_inside_a_loop_has_the_numpy_gradients():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 3, 2)).astype("float32")
    weight = keras.Variable(rng.normal(size=(2,)).astype("float32"), name="scale")

    def row(values):  # reads the variable: (3, 2) -> (3,)
        return keras.ops.sum(keras.ops.sin(values * weight), axis=-1)

    rematerialised = remat_reading(row, [weight])
    total, grad_x, grad_w = _value_and_gradients(lambda values: map_in_turn(rematerialised, values), weight, x)
    w = keras.ops.convert_to_numpy(weight.value)
    np.testing.assert_allclose(total, np.sin(x * w).sum(), rtol=1e-5)
    np.testing.assert_allclose(grad_x, np.cos(x * w) * w, rtol=1e-5, atol=1e-6)  # d/dx sin(x w) = w cos(x w)
    np.testing.assert_allclose(grad_w, (x * np.cos(x * w)).sum(axis=(0, 1)), rtol=1e-5, atol=1e-6)


def test_recomputation_scopes_nest_and_remat_reading_leaves_the_function_alone_when_off():
    def row(values):
        return values

    assert recomputing() and remat_reading(row, []) is not row
    with recomputation(False):
        assert not recomputing() and remat_reading(row, []) is row
        with recomputation(True):
            assert recomputing() and remat_reading(row, []) is not row
        assert not recomputing()
    assert recomputing()
    try:
        with recomputation(False):
            raise KeyError("inside")
    except KeyError:
        pass
    assert recomputing()  # restored after an error too
