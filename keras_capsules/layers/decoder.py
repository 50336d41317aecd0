"""Fully connected reconstruction decoder (Sabour et al. 2017; Efficient-CapsNet MNIST)."""

import math
from collections.abc import Sequence

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.serialization import register


@register
class CapsuleDecoder(keras.layers.Layer):
    """Dense decoder from masked class capsules to an image.

    Input: ``(batch, num_classes * capsule_dim)`` (the output of :class:`Mask`).
    Output: ``(batch, *image_shape)`` in [0, 1] (sigmoid).

    Defaults are the paper's ``160 -> 512 ReLU -> 1024 ReLU -> 784 sigmoid`` (1,411,344 parameters for
    MNIST).

    Args:
        image_shape: the reconstructed image shape, e.g. ``(28, 28, 1)``.
        hidden_units: widths of the hidden ReLU layers.
        hidden_initializer: initializer of the hidden layers (Efficient-CapsNet uses ``he_normal``).
        output_initializer: initializer of the output layer (Efficient-CapsNet: ``glorot_normal``).
    """

    def __init__(
        self,
        image_shape: Sequence[int],
        hidden_units: Sequence[int] = (512, 1024),
        hidden_initializer: str | keras.initializers.Initializer = "glorot_uniform",
        output_initializer: str | keras.initializers.Initializer = "glorot_uniform",
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.image_shape = tuple(int(d) for d in image_shape)
        if not self.image_shape or any(d < 1 for d in self.image_shape):
            errors.fail(self, "image_shape", "a tuple of positive ints", image_shape)
        self.hidden_units = tuple(int(u) for u in hidden_units)
        self.hidden_initializer = hidden_initializer
        self.output_initializer = output_initializer
        self.hidden = [
            keras.layers.Dense(units, activation="relu", kernel_initializer=hidden_initializer, name=f"hidden_{i}")
            for i, units in enumerate(self.hidden_units)
        ]
        self.output_layer = keras.layers.Dense(
            math.prod(self.image_shape), activation="sigmoid", kernel_initializer=output_initializer, name="output"
        )

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 2, "(batch, num_classes * capsule_dim)")
        shape = tuple(input_shape)
        for layer in self.hidden + [self.output_layer]:
            layer.build(shape)
            shape = layer.compute_output_shape(shape)

    def call(self, inputs):
        x = inputs
        for layer in self.hidden:
            x = layer(x)
        x = self.output_layer(x)
        return ops.reshape(x, (ops.shape(x)[0],) + self.image_shape)

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + self.image_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "image_shape": self.image_shape,
                "hidden_units": self.hidden_units,
                "hidden_initializer": self.hidden_initializer,
                "output_initializer": self.output_initializer,
            }
        )
        return config
