"""Backend-agnostic input gradients for tests."""

import keras
import numpy as np


def input_gradient(fn, x):
    """Gradient of ``sum(fn(x))`` (summed over every output tensor) with respect to ``x``, as NumPy."""

    def total(value):
        return sum(keras.ops.sum(keras.ops.cast(o, "float32")) for o in keras.tree.flatten(fn(value)))

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return np.asarray(jax.grad(total)(keras.ops.convert_to_tensor(x)))
    if backend == "tensorflow":
        import tensorflow as tf

        v = tf.Variable(x)
        with tf.GradientTape() as tape:
            y = total(v)
        return tape.gradient(y, v).numpy()
    import torch

    t = torch.tensor(np.asarray(x), requires_grad=True)
    total(t).backward()
    return t.grad.numpy()


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
