"""Backend-agnostic input gradients for tests."""

import keras
import numpy as np


def input_gradient(fn, x):
    """Gradient of ``sum(fn(x))`` (summed over every output tensor) with respect to ``x``, as NumPy.

    The layers ``fn`` calls must be built. On JAX ``fn`` runs in a stateless scope, so the state updates it makes
    (batch-norm statistics in training) are dropped; TensorFlow and PyTorch apply them.
    """

    def total(value):
        return sum(keras.ops.sum(keras.ops.cast(o, "float32")) for o in keras.tree.flatten(fn(value)))

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        def pure(value):
            # A layer's state updates inside jax.grad (batch-norm statistics in training) would leave tracers in its
            # variables; the stateless scope takes them, and the variables keep their values.
            with keras.StatelessScope():
                return total(value)

        return np.asarray(jax.grad(pure)(keras.ops.convert_to_tensor(x)))
    if backend == "tensorflow":
        import tensorflow as tf

        v = tf.Variable(x)
        with tf.GradientTape() as tape:
            y = total(v)
        return tape.gradient(y, v).numpy()
    import torch

    t = x.detach().clone() if torch.is_tensor(x) else torch.tensor(np.asarray(x))
    t.requires_grad_(True)
    total(t).backward()
    gradient = t.grad
    return (gradient.float() if gradient.dtype == torch.bfloat16 else gradient).numpy()  # NumPy has no bfloat16


def numeric_gradient(fn, x, step=1e-5):
    """Central-difference gradient of the scalar ``fn(x)`` (a NumPy function, float64) with respect to ``x``."""
    x = np.array(x, dtype="float64")
    gradient = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        saved = x[index]
        x[index] = saved + step
        upper = fn(x)
        x[index] = saved - step
        lower = fn(x)
        x[index] = saved
        gradient[index] = (upper - lower) / (2 * step)
    return gradient


def _assert_weighted_gradient(route, reference, x, outputs_shape, seed, rtol, atol):
    """``d loss / d x`` of ``route`` against finite differences of ``reference``, for the loss
    ``sum(w_p * poses) + sum(w_a * activations)`` with fixed random ``w`` of ``outputs_shape`` ``(batch, out_caps, dim)``."""
    batch, out_caps, dim = outputs_shape
    rng = np.random.default_rng(seed)
    w_poses, w_acts = rng.normal(size=(batch, out_caps, dim)), rng.normal(size=(batch, out_caps))

    def loss(value):
        mu, a = reference(value)
        return float((mu * w_poses).sum() + (a * w_acts).sum())

    def weighted(value):
        poses, out = route(value)
        return keras.ops.multiply(poses, w_poses.astype("float32")), keras.ops.multiply(out, w_acts.astype("float32"))

    np.testing.assert_allclose(input_gradient(weighted, x), numeric_gradient(loss, x), rtol=rtol, atol=atol)


def assert_training_vote_gradient(router, reference, votes, activations, seed=8, rtol=1e-3, atol=1e-4):
    """Checks a router's vote gradient in training against finite differences of a NumPy reference.

    The loss is a fixed random weighting of the outputs, ``sum(w_p * poses) + sum(w_a * activations)``.

    Args:
        router: a built router, called as ``router(votes, activations, training=True)``.
        reference: ``reference(votes_float64) -> (poses, activations)`` in NumPy.
        votes: ``(batch, in_caps, out_caps, dim)`` float32; activations: ``(batch, in_caps)``.
    """
    batch, _, out_caps, dim = np.shape(votes)

    def route(value):
        return router(value, activations, training=True)

    _assert_weighted_gradient(route, reference, votes, (batch, out_caps, dim), seed, rtol, atol)


def assert_training_weight_gradient(router, name, reference, votes, activations, seed=8, rtol=1e-3, atol=1e-4):
    """Checks the gradient of a router's weight ``name`` in training against finite differences of a NumPy reference.

    The loss is :func:`assert_training_vote_gradient`'s; the router runs with the weight's value
    replaced (``keras.StatelessScope``), so the gradient is taken with respect to that value.

    Args:
        router: a built router, called as ``router(votes, activations, training=True)``.
        name: the weight's name, e.g. ``"frequencies"``.
        reference: ``reference(weight_float64) -> (poses, activations)`` in NumPy.
        votes: ``(batch, in_caps, out_caps, dim)`` float32; activations: ``(batch, in_caps)``.
    """
    (weight,) = [w for w in router.weights if w.name == name]
    batch, _, out_caps, dim = np.shape(votes)

    def route(value):
        with keras.StatelessScope(state_mapping=[(weight, value)]):
            return router(votes, activations, training=True)

    value = keras.ops.convert_to_numpy(weight.value)
    _assert_weighted_gradient(route, reference, value, (batch, out_caps, dim), seed, rtol, atol)
