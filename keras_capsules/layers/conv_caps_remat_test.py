"""ConvCaps ``remat``: training recomputes the votes in the backward pass, with the same outputs and gradients."""

import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.layers import ConcurrentRouting, ConvCaps, FcCaps


def _gradients(model, x):
    """A fixed weighted sum of ``model(x, training=True)`` and its gradients (inputs, then weights).

    Under JAX the gradient is one jitted program, as in ``fit`` (and one compilation instead of one per op).
    """
    weights = model.trainable_weights
    probe = np.random.default_rng(3).normal(size=(4096,)).astype("float32")

    def weighted(out):
        out = keras.ops.reshape(out, (-1,))
        return keras.ops.sum(out * probe[: out.shape[0]])

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        x_var = tf.Variable(x)
        with tf.GradientTape() as tape:
            value = weighted(model(x_var, training=True))
        grads = tape.gradient(value, [x_var] + [w.value for w in weights])
        return float(value), [g.numpy() for g in grads]
    import jax

    def pure(x_value, params):
        with keras.StatelessScope(state_mapping=list(zip(weights, params))):
            return weighted(model(x_value, training=True))

    value, (grad_x, grad_w) = jax.jit(jax.value_and_grad(pure, argnums=(0, 1)))(x, [w.value for w in weights])
    return float(value), [np.asarray(grad_x)] + [np.asarray(g) for g in grad_w]


def _pair(build):
    """The same model with remat on and off (same weights)."""
    on, off = build(True), build(False)
    off.set_weights(on.get_weights())
    return on, off


def _conv_model(remat, router="dynamic"):
    inputs = keras.Input((5, 5, 3, 4))
    poses, _ = ConvCaps(2, 4, kernel_size=3, strides=1, router=router, remat=remat, name="conv")(inputs)
    return keras.Model(inputs, poses)


def _concurrent_model(remat):
    inputs = keras.Input((6, 6, 2, 4))
    stack = ConcurrentRouting(
        [
            ConvCaps(3, kernel_size=3, strides=2, transform="matrix", router="inverted_dot_product", remat=remat),
            FcCaps(2, transform="matrix", router="inverted_dot_product"),
        ],
        iterations=3,
    )
    poses, _ = stack(inputs)
    return keras.Model(inputs, poses)


@pytest.mark.parametrize("build, shape", [(_conv_model, (2, 5, 5, 3, 4)), (_concurrent_model, (2, 6, 6, 2, 4))])
def test_remat_keeps_outputs_and_gradients(build, shape):
    on, off = _pair(build)
    x = np.random.default_rng(0).normal(size=shape).astype("float32")
    value_on, grads_on = _gradients(on, x)
    value_off, grads_off = _gradients(off, x)
    np.testing.assert_allclose(value_on, value_off, rtol=1e-6)
    assert len(grads_on) == len(grads_off) == 1 + len(on.trainable_weights)
    for a, b in zip(grads_on, grads_off):
        # Same maths in two compiled programs that may round differently: float32 rounding, judged at the gradient's scale.
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.max(np.abs(b)))


def test_remat_only_in_training_and_never_with_random_or_moving_state():
    layer = ConvCaps(2, 4, router="inverted_dot_product")
    layer(np.ones((1, 5, 4, 1, 4), "float32"))
    assert layer.remat and layer.rematerializes(True) and not layer.rematerializes(False)
    assert layer.row_chunks(True) == [(0, 1), (1, 2), (2, 3)] and layer.row_chunks(False) == [(0, 3)]  # one output row at a time
    spatial = ConvCaps(2, transform="matrix", router={"name": "em", "child_grid": [5, 4], "kernel_size": 3, "strides": 1})
    spatial(np.ones((1, 5, 4, 1, 4), "float32"))
    assert spatial.rematerializes(True) and spatial.row_chunks(True) == [(0, 3)]  # EM's E-step couples the positions
    assert not ConvCaps(2, 4, router="dynamic", remat=False).rematerializes(True)
    dropout = ConvCaps(2, 4, router={"name": "inverted_dot_product", "dropout": 0.1})
    assert not dropout.rematerializes(True)  # a recomputation would draw another dropout mask
    batch_norm = ConvCaps(2, 4, router=routing.get("fm_agreement"))
    batch_norm(np.ones((1, 3, 3, 1, 4), "float32"))
    assert batch_norm.router.non_trainable_weights and not batch_norm.rematerializes(True)  # moving statistics


def test_remat_config_round_trip_and_type_check():
    layer = ConvCaps(2, 4, remat=False)
    assert ConvCaps.from_config(layer.get_config()).remat is False
    with pytest.raises(TypeError, match=r"argument `remat` expected True or False, received 'yes'"):
        ConvCaps(2, 4, remat="yes")
