"""L2 normalisation with PyTorch's ``F.normalize`` semantics (the GLOM code, the metrics and SupCon share it)."""

from keras import ops

from keras_capsules.ops.norms import in_float32, rescaled


@in_float32
def l2_normalize(x, axis=-1, epsilon=1e-12):
    """``x / max(||x||, sqrt(epsilon))`` over ``axis``: unit vectors, zero vectors stay zero.

    ``epsilon = 1e-12`` floors the norm at 1e-6, PyTorch's ``F.normalize`` default. Computed on
    ``u = x / m`` with ``m = max(max|x|, 1)`` (:func:`~keras_capsules.ops.norms.rescaled`), so the
    squared norm cannot overflow; float16/bfloat16 inputs are normalised in float32 and cast back.

    Args:
        x: ``(..., dim)`` (any shape; ``axis`` is reduced).
        axis: the vector axis.
        epsilon: the floor of the squared norm.

    Returns:
        A tensor of the shape and dtype of ``x``.
    """
    unit, m = rescaled(x, axis)
    return unit * ops.rsqrt(ops.maximum(ops.sum(ops.square(unit), axis=axis, keepdims=True), epsilon / ops.square(m)))
