"""Softmax along any axis without moving it last."""

from keras import ops

from keras_capsules.ops.reductions import max_with_initial


def softmax_along(x, axis):
    """``exp(x - max) / sum exp(x - max)`` over ``axis``, reduced where the axis is.

    TensorFlow's softmax moves a non-last axis to the end and back: two transposes of ``x``
    forward and two in the gradient, which for the routers' ``(batch, out_caps, in_caps)`` logits
    (softmax over the parents, axis 1) cost as much as the routing sums. Same values; the
    max-subtraction is gradient-free, which is exact since softmax is shift-invariant. The last
    axis goes to the backend's softmax.

    Args:
        x: float tensor (or NumPy array) of any rank.
        axis: the axis the result sums to 1 over.

    Returns:
        A tensor of the shape of ``x``.
    """
    x = ops.convert_to_tensor(x)  # a NumPy ``x`` cannot meet a torch tensor in ``-``
    if axis % len(x.shape) == len(x.shape) - 1:
        return ops.softmax(x, axis=-1)
    peak = max_with_initial(x, float("-inf"), axis=axis, keepdims=True)  # (initial: an empty x is allowed)
    exps = ops.exp(x - ops.stop_gradient(peak))
    return exps / ops.sum(exps, axis=axis, keepdims=True)
