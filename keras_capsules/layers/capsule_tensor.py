"""Helpers for the ``(poses, activations)`` capsule-tensor convention of DESIGN.md."""

from keras_capsules import errors


def unpack_capsules(owner, inputs):
    """Splits a layer input into ``(poses, activations)``.

    Args:
        owner: the layer receiving the input (named in errors).
        inputs: a poses tensor, or a pair ``(poses, activations)``; activations may be ``None``.

    Returns:
        ``(poses, activations)``; ``activations`` is ``None`` for a bare poses tensor.
    """
    if isinstance(inputs, (list, tuple)):
        if len(inputs) != 2:
            errors.fail(owner, "inputs", "a poses tensor or a (poses, activations) pair", f"a sequence of {len(inputs)} items")
        return inputs[0], inputs[1]
    return inputs, None


def unpack_shapes(owner, input_shape):
    """Shape counterpart of :func:`unpack_capsules` for ``build``: returns ``(poses_shape, activations_shape)``."""
    if isinstance(input_shape, (list, tuple)) and input_shape and isinstance(input_shape[0], (list, tuple)):
        if len(input_shape) != 2:
            errors.fail(owner, "inputs", "a poses tensor or a (poses, activations) pair", f"{len(input_shape)} shapes")
        return tuple(input_shape[0]), (None if input_shape[1] is None else tuple(input_shape[1]))
    if isinstance(input_shape, (list, tuple)) and len(input_shape) == 2 and input_shape[1] is None and isinstance(input_shape[0], (list, tuple)):
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
        errors.fail(owner, "activations", f"shape {expected} (the poses' shape without capsule_dim)", f"shape {tuple(activations_shape)}")
