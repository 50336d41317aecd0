"""Numerically safe norms for capsule poses."""

from keras import ops

DEFAULT_EPSILON = 1e-7


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


def capsule_length(poses, epsilon=DEFAULT_EPSILON):
    """Length of each capsule, the class score of vector capsule networks.

    Args:
        poses: ``(batch, ..., num_capsules, capsule_dim)``.

    Returns:
        ``(batch, ..., num_capsules)``, ``sqrt(sum(v**2) + epsilon)`` (Efficient-CapsNet's form).
    """
    return safe_norm(poses, axis=-1, epsilon=epsilon)
