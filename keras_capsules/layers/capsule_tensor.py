"""Helpers for the ``(poses, activations)`` capsule-tensor convention of DESIGN.md."""

import keras
from keras import ops

from keras_capsules import errors


def unpack_capsules(owner, inputs):
    """Splits a layer input into ``(poses, activations)``.

    Args:
        owner: the layer receiving the input (named in errors).
        inputs: a poses tensor, or a pair ``(poses, activations)``; activations may be ``None``.

    Returns:
        ``(poses, activations)`` in a float dtype (see :func:`as_float`); ``activations`` is ``None``
        for a bare poses tensor.
    """
    if isinstance(inputs, (list, tuple)):
        if len(inputs) != 2:
            errors.fail(
                owner, "inputs", "a poses tensor or a (poses, activations) pair", f"a sequence of {len(inputs)} items"
            )
        return as_float(owner, inputs[0]), (None if inputs[1] is None else as_float(owner, inputs[1]))
    return as_float(owner, inputs), None


def as_float(owner, x):
    """``x`` cast to ``owner``'s compute dtype when it is an integer or bool tensor; float tensors pass.

    Keras autocasts only float inputs, and an integer tensor would otherwise turn the float weights
    it meets into integers (``FcCaps`` on int32 poses gave all-zero votes).
    """
    if keras.backend.is_float_dtype(keras.backend.standardize_dtype(x.dtype)):
        return x
    return ops.cast(x, owner.compute_dtype)


def unpack_shapes(owner, input_shape):
    """Shape counterpart of :func:`unpack_capsules` for ``build``: returns ``(poses_shape, activations_shape)``."""
    if isinstance(input_shape, (list, tuple)) and input_shape and isinstance(input_shape[0], (list, tuple)):
        if len(input_shape) != 2:
            errors.fail(owner, "inputs", "a poses tensor or a (poses, activations) pair", f"{len(input_shape)} shapes")
        return tuple(input_shape[0]), (None if input_shape[1] is None else tuple(input_shape[1]))
    if (
        isinstance(input_shape, (list, tuple))
        and len(input_shape) == 2
        and input_shape[1] is None
        and isinstance(input_shape[0], (list, tuple))
    ):
        return tuple(input_shape[0]), None
    return tuple(input_shape), None


def check_activations_shape(owner, poses_shape, activations_shape):
    """Activations must have the poses' shape without the last (capsule_dim) axis."""
    if activations_shape is None:
        return
    expected = tuple(poses_shape[:-1])
    if len(activations_shape) != len(expected) or any(
        a is not None and e is not None and a != e for a, e in zip(activations_shape, expected)
    ):
        errors.fail(
            owner,
            "activations",
            f"shape {expected} (the poses' shape without capsule_dim)",
            f"shape {tuple(activations_shape)}",
        )
