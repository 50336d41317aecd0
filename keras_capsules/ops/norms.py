"""Numerically safe norms for capsule poses."""

import keras
from keras import ops

DEFAULT_EPSILON = 1e-7
LOW_PRECISION = ("float16", "bfloat16")


def in_float32(fn):
    """Decorator: runs ``fn(x, ...)`` in float32 when ``x`` is float16/bfloat16 and casts the result back.

    Squared norms overflow float16 above |x| ~ 256 and small epsilons underflow, so these reductions
    are done in float32 (the usual mixed-precision practice).
    """

    def wrapper(x, *args, **kwargs):
        dtype = keras.backend.standardize_dtype(x.dtype)
        if dtype not in LOW_PRECISION:
            return fn(x, *args, **kwargs)
        return ops.cast(fn(ops.cast(x, "float32"), *args, **kwargs), dtype)

    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    return wrapper


@in_float32
def safe_norm(x, axis=-1, keepdims=False, epsilon=DEFAULT_EPSILON):
    """L2 norm ``sqrt(sum(x**2) + epsilon)``: finite value and gradient at ``x = 0``.

    Args:
        x: tensor of any shape.
        axis: axis (or tuple of axes) to reduce; a matrix pose stored flat reduces its last axis.
        keepdims: keep the reduced axes with length 1.
        epsilon: added under the square root (``tf.norm`` has a NaN gradient at 0).

    Returns:
        The norm, shape of ``x`` without ``axis`` (or with length-1 axes when ``keepdims``).
    """
    return ops.sqrt(ops.sum(ops.square(x), axis=axis, keepdims=keepdims) + epsilon)


def sqrt_safe_grad(q):
    """``sqrt(q)`` for ``q >= 0`` whose gradient is 0 (not ``inf * 0 = NaN``) at ``q = 0``."""
    positive = q > 0
    return ops.where(positive, ops.sqrt(ops.where(positive, q, ops.ones_like(q))), ops.zeros_like(q))


def capsule_length(poses, epsilon=DEFAULT_EPSILON):
    """Length of each capsule, the class score of vector capsule networks.

    Args:
        poses: ``(batch, ..., num_capsules, capsule_dim)``.

    Returns:
        ``(batch, ..., num_capsules)``, ``sqrt(sum(v**2) + epsilon)`` (Efficient-CapsNet's form).
    """
    return safe_norm(poses, axis=-1, epsilon=epsilon)
