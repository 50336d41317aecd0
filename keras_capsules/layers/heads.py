"""Heads on top of class capsules: ``Squash``, ``Length``, ``Mask``."""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import unpack_capsules
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

    def __init__(self, kind="squash", epsilon=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.kind = errors.check_one_of(self, "kind", kind, ("squash", "squash_efficient"))
        self.epsilon = float(epsilon)
        self._fn = get_squash(kind)

    def call(self, poses):
        return self._fn(poses, epsilon=self.epsilon)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({"kind": self.kind, "epsilon": self.epsilon})
        return config


@register
class Length(keras.layers.Layer):
    """Capsule lengths, the class scores of vector capsule networks.

    Input: poses ``(batch, ..., num_capsules, capsule_dim)`` or a ``(poses, activations)`` pair.
    Output: ``(batch, ..., num_capsules)``, ``sqrt(sum(v^2) + epsilon)``.
    """

    def __init__(self, epsilon=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.epsilon = float(epsilon)

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
    the labelled ones (training). Labels are class indices ``(batch,)`` or one-/multi-hot
    ``(batch, num_capsules)``.

    Input: poses ``(batch, num_capsules, capsule_dim)`` (or a pair). Output: ``(batch, num_capsules * capsule_dim)``.

    Args:
        top_k: capsules kept when no labels are given (1; MultiMNIST uses 2).
    """

    def __init__(self, top_k=1, **kwargs):
        super().__init__(**kwargs)
        self.top_k = errors.check_positive_int(self, "top_k", top_k)

    def call(self, inputs, labels=None):
        poses, _ = unpack_capsules(self, inputs)
        if len(poses.shape) != 3:
            errors.fail(self, "inputs", "poses of rank 3 (batch, num_capsules, capsule_dim)", f"shape {tuple(poses.shape)}")
        num_capsules = poses.shape[1]
        if labels is None:
            lengths = ops.sum(ops.square(poses), axis=-1)
            _, top = ops.top_k(lengths, k=self.top_k)
            mask = ops.sum(ops.one_hot(top, num_capsules, dtype=poses.dtype), axis=1)
        else:
            mask = class_mask(labels, num_capsules, poses.dtype)
        masked = poses * ops.expand_dims(mask, -1)
        return ops.reshape(masked, (ops.shape(poses)[0], num_capsules * poses.shape[2]))

    def get_config(self):
        config = super().get_config()
        config["top_k"] = self.top_k
        return config


def class_mask(labels, num_classes, dtype):
    """``(batch,)`` indices or ``(batch, num_classes)`` (multi-)hot labels -> ``(batch, num_classes)`` mask."""
    if len(labels.shape) == 2 and labels.shape[-1] == num_classes:
        return ops.cast(labels, dtype)
    labels = ops.reshape(labels, (-1,))
    return ops.one_hot(ops.cast(labels, "int32"), num_classes, dtype=dtype)
