"""Numerically safe norms for capsule poses."""

import keras
from keras import ops

from keras_capsules.ops.dtypes import LOW_PRECISION
from keras_capsules.ops.reductions import max_with_initial

DEFAULT_EPSILON = 1e-7


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


def rescaled(x, axis=-1):
    """``(x / m, m)`` with ``m = max(max|x|, 1)`` over ``axis`` (kept), a constant for the gradient.

    Squared norms of ``x / m`` cannot overflow (each entry is at most 1 in magnitude), so norms and
    directions computed from them are finite for any finite ``x``; ``m = 1`` leaves ordinary
    vectors untouched (bit for bit).
    """
    # A floor of 1 in the reduction rather than ``maximum(max, 1)``: TensorFlow's ``max`` refuses empty tensors (batch 0).
    scale = ops.stop_gradient(max_with_initial(ops.abs(x), 1.0, axis=axis, keepdims=True))
    # Two divisions by sqrt(m): XLA (JAX) divides by multiplying with 1/m, which flushes to zero for m > ~1e38.
    root = ops.sqrt(scale)
    return x / root / root, scale


#: Magnitude beyond which :func:`limit_magnitude` scales values down (products of two stay finite in float32).
MAGNITUDE_LIMIT = 1e15


def clip_magnitude(x, limit):
    """``clip(x, -limit, limit)`` whose gradient passes straight through (``keras.ops.custom_gradient``).

    A safeguard for values that ordinary inputs never reach (votes beyond ``1e15``): the forward
    value is the clip, but the backward pass is the identity instead of the clip's mask, which
    costs four passes over a vote-sized tensor (two comparisons, two selects: about a third of an
    ``InvertedAttentionCapsNet`` training step, measured with ``benchmarks/profile_step.py``). The
    gradient differs from the clip's only at clipped entries (1 instead of 0), i.e. only for inputs
    already beyond the bound, where it stays finite.
    """

    @ops.custom_gradient
    def clipped(value):
        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            return upstream

        return ops.clip(value, -limit, limit), grad

    return clipped(x)


def limit_magnitude(x, axis=-1, limit=MAGNITUDE_LIMIT):
    """Scales ``x`` by one gradient-free factor per slice over ``axis`` so that ``max|x| <= limit``.

    For functions that are (nearly) scale-invariant in those axes, such as LayerNorm or attention
    that saturates, this keeps squares and products finite for any finite input and is correct in
    the limit. Slices within ``limit`` are returned unchanged (bit for bit), and float16 tensors
    always (their range ends at 65504).
    """
    if keras.backend.standardize_dtype(x.dtype) == "float16":
        return x
    peak = ops.stop_gradient(max_with_initial(ops.abs(x), limit, axis=axis, keepdims=True))
    return ops.multiply(x, limit / peak)


@in_float32
def safe_norm(x, axis=-1, keepdims=False, epsilon=DEFAULT_EPSILON):
    """L2 norm ``sqrt(sum(x**2) + epsilon)``: finite value and gradient at ``x = 0``.

    Overflow-safe: computed as ``m sqrt(sum((x/m)**2) + epsilon/m**2)`` (see :func:`rescaled`), so
    the result is finite whenever the true norm is representable (components up to ~1e38 / sqrt(n)).

    Args:
        x: tensor of any shape.
        axis: axis (or tuple of axes) to reduce; a matrix pose stored flat reduces its last axis.
        keepdims: keep the reduced axes with length 1.
        epsilon: added under the square root (``tf.norm`` has a NaN gradient at 0).

    Returns:
        The norm, shape of ``x`` without ``axis`` (or with length-1 axes when ``keepdims``).
    """
    unit, scale = rescaled(x, axis)
    norm = scale * ops.sqrt(ops.sum(ops.square(unit), axis=axis, keepdims=True) + epsilon / ops.square(scale))
    return norm if keepdims else ops.squeeze(norm, axis)


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
