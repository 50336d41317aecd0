"""``CapsuleLogits``: class logits from class poses through one linear map shared by the classes (Tsai et al. 2020)."""

import math

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.serialization import register


@register
class CapsuleLogits(keras.layers.Layer):
    """Apple's classifier head of inverted dot-product attention capsules: ``logit_j = w . p_j + b``.

    One ``Linear(d -> 1)`` (``kernel (d, 1)``, ``bias (1,)``) is shared by every class capsule,
    initialised as PyTorch's ``Linear``: kernel and bias ``U(-1/sqrt(d), 1/sqrt(d))``.

    Input: class poses ``(batch, classes, d)``. Output: logits ``(batch, classes)``.
    """

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 3, "(batch, classes, capsule_dim)")
        dim = input_shape[-1]
        if dim is None:
            errors.fail(self, "inputs", "a known capsule_dim (last axis)", f"shape {tuple(input_shape)}")
        limit = 1.0 / math.sqrt(dim)
        self.kernel = self.add_weight(
            shape=(dim, 1), initializer=keras.initializers.RandomUniform(-limit, limit), name="kernel"
        )
        self.bias = self.add_weight(
            shape=(1,), initializer=keras.initializers.RandomUniform(-limit, limit), name="bias"
        )

    def call(self, poses):
        return ops.squeeze(ops.matmul(poses, ops.cast(self.kernel, poses.dtype)), axis=-1) + ops.cast(
            self.bias, poses.dtype
        )

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:2])
