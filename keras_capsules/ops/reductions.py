"""``max`` and ``min`` with a starting value, the same on every backend and device.

``keras.ops.max(x, initial=v)`` is what lets TensorFlow reduce an empty tensor (batch 0), but Keras' PyTorch
``max`` and ``min`` build ``initial`` with ``torch.full`` and no device: on a GPU the comparison then fails
("Expected all tensors to be on the same device ... cuda:0 and cpu"). These two compare on ``x``'s device there.
"""

import keras
from keras import ops


def max_with_initial(x, initial, axis=None, keepdims=False):
    """``max(initial, max of x over axis)``: ``keras.ops.max(x, axis, keepdims, initial=initial)``'s value.

    Args:
        x: tensor of any shape, possibly empty.
        initial: Python number, the result's floor (and the value of an empty reduction).
        axis: ``None`` (all axes), an axis or a tuple of axes.
        keepdims: keep the reduced axes with size 1.

    Returns:
        ``x``'s shape without (or, with ``keepdims``, with size 1 in) the reduced axes, ``x``'s dtype.
    """
    return _reduce(ops.max, ops.maximum, x, initial, axis, keepdims)


def min_with_initial(x, initial, axis=None, keepdims=False):
    """``min(initial, min of x over axis)``: as :func:`max_with_initial`, the ceiling ``initial``."""
    return _reduce(ops.min, ops.minimum, x, initial, axis, keepdims)


def _reduce(reduce, compare, x, initial, axis, keepdims):
    if keras.backend.backend() != "torch":
        return reduce(x, axis=axis, keepdims=keepdims, initial=initial)
    x = ops.convert_to_tensor(x)
    if 0 not in tuple(x.shape):
        return compare(reduce(x, axis=axis, keepdims=keepdims), ops.cast(initial, x.dtype))
    rank = len(x.shape)
    axes = range(rank) if axis is None else {a % rank for a in (axis if isinstance(axis, (tuple, list)) else (axis,))}
    if keepdims:
        shape = tuple(1 if i in axes else size for i, size in enumerate(x.shape))
    else:
        shape = tuple(size for i, size in enumerate(x.shape) if i not in axes)
    return ops.full(shape, initial, dtype=x.dtype)
