"""Heads on top of class capsules: ``Squash``, ``Length``, ``Mask``."""

import keras
import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import as_float, unpack_capsules, unpack_shapes
from keras_capsules.ops.norms import capsule_length
from keras_capsules.ops.squash import get_squash
from keras_capsules.serialization import register


@register
class Squash(keras.layers.Layer):
    """Squash layer (a real layer, so models load in Keras' safe mode; no ``Lambda``).

    Input and output: poses ``(..., capsule_dim)``.

    Args:
        kind: ``"squash"`` (Sabour) or ``"squash_efficient"`` (Efficient-CapsNet).
        epsilon: numerical guard.
    """

    def __init__(self, kind: str = "squash", epsilon: float = 1e-7, **kwargs) -> None:
        super().__init__(**kwargs)
        self.kind = errors.check_one_of(self, "kind", kind, ("squash", "squash_efficient"))
        self.epsilon = float(epsilon)
        self._fn = get_squash(kind)

    def call(self, poses):
        return self._fn(as_float(self, poses), epsilon=self.epsilon)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({"kind": self.kind, "epsilon": self.epsilon})
        return config


@register
class Length(keras.layers.Layer):
    """Capsule lengths, the class scores of vector capsule networks.

    Input: poses ``(batch, ..., num_capsules, capsule_dim)`` (rank >= 2) or a ``(poses, activations)`` pair.
    Output: ``(batch, ..., num_capsules)``, ``sqrt(sum(v^2) + epsilon)``.
    """

    def __init__(self, epsilon: float = 1e-7, **kwargs) -> None:
        super().__init__(**kwargs)
        self.epsilon = float(epsilon)

    def build(self, input_shape):
        poses_shape, _ = unpack_shapes(self, input_shape)
        if len(poses_shape) < 2:  # a rank-1 tensor would give one scalar length for the whole batch
            errors.fail(
                self,
                "inputs",
                "poses of rank >= 2, (batch, ..., capsule_dim)",
                f"shape {poses_shape} (rank {len(poses_shape)})",
            )

    def call(self, inputs):
        poses, _ = unpack_capsules(self, inputs)
        return capsule_length(poses, epsilon=self.epsilon)

    def get_config(self):
        config = super().get_config()
        config["epsilon"] = self.epsilon
        return config


@register
class Mask(keras.layers.Layer):
    """Keeps the pose of the chosen class capsule(s), zeroes the others, and flattens.

    ``mask(poses)`` keeps the ``top_k`` longest capsules (inference); ``mask(poses, labels)`` keeps
    the labelled ones (training). Labels are class indices ``(batch,)`` / ``(batch, 1)`` or one-/multi-hot
    ``(batch, num_capsules)``, checked as :func:`class_mask` describes (an index outside
    ``[0, num_capsules)`` raises in eager mode and gives NaN rows inside compiled graphs).

    Input: poses ``(batch, num_capsules, capsule_dim)`` (or a pair). Output: ``(batch, num_capsules * capsule_dim)``.

    Args:
        top_k: capsules kept when no labels are given (1; MultiMNIST uses 2).
    """

    def __init__(self, top_k: int = 1, **kwargs) -> None:
        super().__init__(**kwargs)
        self.top_k = errors.check_positive_int(self, "top_k", top_k)

    def call(self, inputs, labels=None):
        poses, _ = unpack_capsules(self, inputs)
        if len(poses.shape) != 3:
            errors.fail(
                self, "inputs", "poses of rank 3 (batch, num_capsules, capsule_dim)", f"shape {tuple(poses.shape)}"
            )
        num_capsules = poses.shape[1]
        if labels is None:
            if num_capsules is not None and self.top_k > num_capsules:
                errors.fail(self, "top_k", f"at most the number of capsules, {num_capsules}", self.top_k)
            lengths = ops.sum(ops.square(poses), axis=-1)
            _, top = ops.top_k(lengths, k=self.top_k)
            mask = ops.sum(ops.one_hot(top, num_capsules, dtype=poses.dtype), axis=1)
        else:
            mask = class_mask(self, "labels", labels, num_capsules, poses.dtype, batch=poses.shape[0])
        masked = poses * ops.expand_dims(mask, -1)
        return ops.reshape(masked, (ops.shape(poses)[0], num_capsules * poses.shape[2]))

    def get_config(self):
        config = super().get_config()
        config["top_k"] = self.top_k
        return config


def class_mask(owner, argument, labels, num_classes, dtype, batch=None):
    """``(batch,)``/``(batch, 1)`` indices or ``(batch, num_classes)`` (multi-)hot labels -> ``(batch, num_classes)`` mask.

    Checks, naming ``owner`` and ``argument``: the rank and width of ``labels``, their batch size
    against ``batch`` (when both are known), and, when the values are known (NumPy or eager
    tensors), that indices are whole numbers in ``[0, num_classes)`` and hot labels lie in [0, 1].
    Inside a compiled graph (``tf.function``, ``jax.jit``) values cannot be checked without a
    backend-specific assertion, so an out-of-range index gives a row of NaN instead of the
    all-zero row ``one_hot`` would give: the loss turns NaN visibly rather than being silently wrong.
    """
    shape = tuple(labels.shape)
    expected = f"class indices (batch,) or (batch, 1), or one-hot (batch, {num_classes})"
    if len(shape) not in (1, 2) or (len(shape) == 2 and shape[1] not in (1, num_classes)):
        errors.fail(owner, argument, expected, f"shape {shape}")
    if batch is not None and shape[0] is not None and shape[0] != batch:
        errors.fail(owner, argument, f"{batch} labels, one per example of the batch", f"shape {shape}")
    hot = len(shape) == 2 and shape[1] == num_classes and num_classes != 1
    values = errors.concrete_value(labels)
    if values is not None:
        if hot and not np.all((values >= 0) & (values <= 1)):
            errors.fail(
                owner,
                argument,
                f"one-/multi-hot labels with values in [0, 1] for {num_classes} classes",
                f"values in [{values.min().item()}, {values.max().item()}]",
            )
        if not hot:
            bad = values[(values < 0) | (values >= num_classes) | (values != np.round(values))]
            if bad.size:
                errors.fail(
                    owner,
                    argument,
                    f"class indices in [0, {num_classes})",
                    f"{bad.size} label(s) such as {bad.reshape(-1)[0].item()!r}",
                )
    if hot:
        return ops.cast(labels, dtype)
    labels = ops.reshape(labels, (-1,))
    valid = ops.logical_and(labels >= 0, labels < num_classes)
    mask = ops.one_hot(ops.cast(labels, "int32"), num_classes, dtype=dtype)
    return ops.where(ops.expand_dims(valid, -1), mask, ops.full_like(mask, float("nan")))
