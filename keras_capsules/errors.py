"""Argument and shape checks that raise errors naming the layer, the argument, the expected and the received value."""

import numbers
from typing import NoReturn

import numpy as np


def _where(owner):
    name = getattr(owner, "name", None)
    kind = type(owner).__name__ if not isinstance(owner, str) else owner
    return f"{kind} '{name}'" if name and not isinstance(owner, str) else kind


def fail(owner, argument, expected, received, error=ValueError) -> NoReturn:
    """Raise ``error`` with the standard message.

    Args:
        owner: the layer (or a class name string) reporting the problem.
        argument: the argument or input name.
        expected: what was expected, in words.
        received: what arrived.
    """
    raise error(f"{_where(owner)}: argument `{argument}` expected {expected}, received {received!r}.")


def is_integer(value):
    """True for every integral type (Python ``int``, ``np.int64``, ``np.uint8``, any ``numbers.Integral``).

    False for bools (``True`` is not a size) and for floats, even whole ones (``2.0`` is refused as a
    size: a float there is usually a division gone wrong, and Keras would fail later on it).
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def is_number(value):
    """True for every real number type (``int``, ``float``, NumPy integers and floats), False for bools."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_whole_labels(owner, argument, labels):
    """Refuses class-index labels that are not whole numbers, which would be truncated in silence (2.7 -> class 2).

    Args:
        owner: the layer, model or function (a string) reporting the problem.
        argument: the argument name, e.g. ``"y"``.
        labels: the class indices, any array-like; float labels with whole values (``2.0``) pass.

    Returns:
        ``labels`` unchanged.
    """
    values = np.asarray(labels)
    if values.dtype.kind == "f":
        bad = values[~np.isfinite(values) | (values != np.round(values))]
        if bad.size:
            fail(
                owner,
                argument,
                "class indices that are whole numbers (2.0 is accepted; a float such as 2.7 would be truncated to class 2)",
                f"{bad.size} non-integral label(s) such as {bad.reshape(-1)[0].item()!r}",
            )
    return labels


def labels_outside(labels, classes=None):
    """The labels of ``labels`` that are no class index of ``classes`` classes: below 0, or ``>= classes`` when given.

    Args:
        labels: class indices, any array-like of numbers (whole-number floats included).
        classes: the number of classes, or ``None`` (then only negative labels are outside).

    Returns:
        The offending labels as a flat NumPy array (empty when every label lies inside).
    """
    values = np.asarray(labels).reshape(-1)
    outside = values < 0 if classes is None else (values < 0) | (values >= classes)
    return values[outside]


def describe_labels(bad, total, shown=5):
    """``"3 of 8 label(s), values -1, 10, 12"``: how many of ``total`` labels are ``bad`` and their first ``shown`` distinct values."""
    distinct = np.unique(bad)
    listed = ", ".join(repr(value.item()) for value in distinct[:shown])
    return f"{bad.size} of {total} label(s), values {listed}{', ...' if distinct.size > shown else ''}"


def check_label_range(owner, argument, labels, classes=None):
    """Refuses class-index labels below 0 or ``>= classes``: losses read them as no class (``one_hot`` of 10 is a zero row) and train to NaN.

    Args:
        owner: the layer, model or function (a string) reporting the problem.
        argument: the argument name, e.g. ``"y"``.
        labels: the class indices ``(N,)`` or ``(N, 1)``, any array-like.
        classes: the number of classes, or ``None`` (unknown: only negative labels are refused).

    Returns:
        ``labels`` unchanged.
    """
    values = np.asarray(labels)
    bad = labels_outside(values, classes)
    if bad.size:
        expected = "class indices >= 0" if classes is None else f"class indices in 0..{classes - 1} ({classes} classes)"
        fail(owner, argument, expected, describe_labels(bad, values.size))
    return labels


def check_positive_int(owner, argument, value, minimum=1):
    """Checks that ``value`` is an integer >= ``minimum`` (NumPy integers accepted, bools refused).

    Returns:
        ``value`` as a Python ``int`` (so configs stay JSON-serialisable).
    """
    if not is_integer(value):
        fail(owner, argument, f"an integer >= {minimum}", value, TypeError)
    if value < minimum:
        fail(owner, argument, f"an integer >= {minimum}", value)
    return int(value)


def check_one_of(owner, argument, value, choices):
    """Checks that ``value`` is one of ``choices``."""
    if value not in choices:
        fail(owner, argument, f"one of {sorted(map(str, choices))}", value)
    return value


def check_rank(owner, argument, shape, ranks, meaning):
    """Checks that a tensor shape has one of the allowed ranks.

    Args:
        shape: the received shape (tuple).
        ranks: an int or a tuple of allowed ranks.
        meaning: the expected layout in words, e.g. ``"(batch, in_caps, out_caps, dim)"``.
    """
    ranks = (ranks,) if isinstance(ranks, int) else tuple(ranks)
    if len(shape) not in ranks:
        fail(owner, argument, f"a tensor of rank {' or '.join(map(str, ranks))} {meaning}", f"shape {tuple(shape)}")
    return shape


def check_kernel_fits(owner, kernel_size, padding, input_shape):
    """Checks that a ``padding="valid"`` window of ``kernel_size`` (int or pair) fits the input's height and width.

    Args:
        input_shape: ``(batch, H, W, ...)``; unknown sizes pass.

    Raises:
        ValueError: naming argument ``kernel_size``, the input's height and width and its shape
            (instead of the backend's "output size would be zero or negative" later).
    """
    if padding != "valid":
        return
    kernel = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size, kernel_size)
    height, width = tuple(input_shape)[1:3]
    if any(size is not None and size < k for size, k in zip((height, width), kernel)):
        fail(
            owner,
            "kernel_size",
            f"a window no larger than the input's height x width, {height}x{width} (input shape {tuple(input_shape)}), "
            f"with padding='valid' (or padding='same')",
            kernel_size,
        )


def check_dim(owner, argument, shape, axis, expected, meaning):
    """Checks that ``shape[axis]`` equals ``expected`` (unknown dims pass)."""
    got = shape[axis]
    if got is not None and expected is not None and got != expected:
        fail(owner, argument, f"{meaning} = {expected} on axis {axis}", f"shape {tuple(shape)}")
    return shape


def concrete_value(x):
    """The NumPy value of ``x`` when it is known now (NumPy, Python, an eager tensor), else ``None``.

    ``None`` for symbolic Keras tensors, tensors inside a ``tf.function`` graph and JAX tracers:
    value checks then fall back to what the caller does in graphs.
    """
    if isinstance(x, (np.ndarray, np.generic, numbers.Number, list, tuple)):
        return np.asarray(x)
    import keras

    if keras.backend.is_keras_tensor(x):
        return None
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return np.asarray(x) if tf.executing_eagerly() and hasattr(x, "numpy") else None
    if backend == "jax":
        import jax

        return None if isinstance(x, jax.core.Tracer) else np.asarray(x)
    return keras.ops.convert_to_numpy(x)
