"""Convolutional reconstruction decoders of the papers' models (the dense one is :class:`~keras_capsules.layers.CapsuleDecoder`).

Both map the masked class capsules ``(batch, classes * capsule_dim)`` (the output of
:class:`~keras_capsules.layers.Mask`) to images ``(batch, H, W, C)`` in [0, 1]. Their sublayers are
created in ``__init__`` and built in ``build``.
"""

from collections.abc import Sequence

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.serialization import register


@register
class UpsamplingDecoder(keras.layers.Layer):
    """Efficient-CapsNet's smallNORB decoder: Dense to an ``s x s`` map, then 3 x (bilinear x2, conv 3x3 valid, LeakyReLU), then a sigmoid conv.

    Input ``(batch, classes * capsule_dim)``; output ``(batch, H, W, C)`` with
    ``H = W = 8 * seed_size - 16`` (48 for ``seed_size=8``).

    Args:
        image_shape: ``(H, W, C)`` of the reconstruction; must equal ``8 * seed_size - 16`` square.
        seed_size: side of the first map (8).
        filters: widths of the three upsampling convolutions ((64, 128, 128)).
    """

    def __init__(
        self,
        image_shape: Sequence[int],
        seed_size: int = 8,
        filters: Sequence[int] = (64, 128, 128),
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.image_shape = tuple(int(d) for d in image_shape)
        self.seed_size = int(seed_size)
        self.filters = tuple(int(f) for f in filters)
        side = 8 * self.seed_size - 16
        if len(self.image_shape) != 3 or self.image_shape[:2] != (side, side):
            errors.fail(self, "image_shape", f"({side}, {side}, C) for seed_size={self.seed_size}", image_shape)
        self.seed = keras.layers.Dense(self.seed_size * self.seed_size, name="seed")
        self.reshape = keras.layers.Reshape((self.seed_size, self.seed_size, 1))
        self.blocks = []
        for i, width in enumerate(self.filters):
            self.blocks += [
                keras.layers.UpSampling2D(2, interpolation="bilinear", name=f"up_{i}"),
                keras.layers.Conv2D(width, 3, name=f"conv_{i}"),
                keras.layers.LeakyReLU(negative_slope=0.3, name=f"leaky_{i}"),
            ]
        self.output_conv = keras.layers.Conv2D(self.image_shape[-1], 3, activation="sigmoid", name="output")

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 2, "(batch, classes * capsule_dim)")
        shape = tuple(input_shape)
        for layer in [self.seed, self.reshape] + self.blocks + [self.output_conv]:
            layer.build(shape)
            shape = layer.compute_output_shape(shape)

    def call(self, inputs):
        x = self.reshape(self.seed(inputs))
        for layer in self.blocks:
            x = layer(x)
        return self.output_conv(x)

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + self.image_shape

    def get_config(self):
        config = super().get_config()
        config.update({"image_shape": self.image_shape, "seed_size": self.seed_size, "filters": self.filters})
        return config


@register
class DeconvDecoder(keras.layers.Layer):
    """FMRouting's deconvolution decoder (``DecoderConv``, ex4_3_1) for the affNIST model.

    The masked class capsules are summed over the classes (the code's ``Mask(share=True)``): with one
    capsule kept by the mask this is that capsule's pose, so the decoder sees a ``capsule_dim``
    vector. Then ``Dense(base*base*filters)`` -> BatchNorm -> LeakyReLU -> reshape
    ``(base, base, filters)`` -> ConvT(filters/2, 5x5, s1) -> BN -> LeakyReLU -> ConvT(filters/4,
    5x5, s2) -> BN -> LeakyReLU -> ConvT(channels, 5x5, s2, sigmoid); the transposed convolutions are
    he_normal with L2 ``weight_decay``, the Dense layer glorot_uniform without regularisation (as in the code).

    Input ``(batch, classes * capsule_dim)``; output ``(batch, 4*base, 4*base, channels)`` in [0, 1].
    The defaults give 186,145 trainable parameters and 12,896 BatchNorm statistics (199,041 in all)
    for 10 x 16D capsules and 40x40x1.

    Args:
        image_shape: ``(H, W, C)`` of the reconstruction; must be ``(4*base, 4*base, C)``.
        capsule_dim: pose size of one class capsule (16).
        base: side of the first feature map (10).
        filters: channels of the first feature map (64).
        weight_decay: L2 factor of the transposed-convolution kernels (1e-4).
    """

    def __init__(
        self,
        image_shape: Sequence[int],
        capsule_dim: int = 16,
        base: int = 10,
        filters: int = 64,
        weight_decay: float = 1e-4,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.image_shape = tuple(int(d) for d in image_shape)
        self.capsule_dim = errors.check_positive_int(self, "capsule_dim", capsule_dim)
        self.base = errors.check_positive_int(self, "base", base)
        self.filters = errors.check_positive_int(self, "filters", filters, minimum=4)
        self.weight_decay = float(weight_decay)
        side = 4 * self.base
        if len(self.image_shape) != 3 or self.image_shape[:2] != (side, side):
            errors.fail(self, "image_shape", f"({side}, {side}, C) for base={self.base}", image_shape)
        conv = dict(
            kernel_size=5,
            padding="same",
            kernel_initializer="he_normal",
            kernel_regularizer=keras.regularizers.L2(self.weight_decay),
        )
        self.stack = [
            keras.layers.Dense(self.base * self.base * self.filters, name="dense"),
            keras.layers.BatchNormalization(name="dense_bn"),
            keras.layers.LeakyReLU(name="dense_leaky"),
            keras.layers.Reshape((self.base, self.base, self.filters), name="reshape"),
            keras.layers.Conv2DTranspose(self.filters // 2, strides=1, name="deconv1", **conv),
            keras.layers.BatchNormalization(name="deconv1_bn"),
            keras.layers.LeakyReLU(name="deconv1_leaky"),
            keras.layers.Conv2DTranspose(self.filters // 4, strides=2, name="deconv2", **conv),
            keras.layers.BatchNormalization(name="deconv2_bn"),
            keras.layers.LeakyReLU(name="deconv2_leaky"),
            keras.layers.Conv2DTranspose(self.image_shape[-1], strides=2, activation="sigmoid", name="deconv3", **conv),
        ]

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 2, "(batch, classes * capsule_dim)")
        if input_shape[-1] is not None and input_shape[-1] % self.capsule_dim:
            errors.fail(
                self,
                "inputs",
                f"a last axis that is a multiple of capsule_dim={self.capsule_dim}",
                f"shape {tuple(input_shape)}",
            )
        shape = (input_shape[0], self.capsule_dim)
        for layer in self.stack:
            layer.build(shape)
            shape = layer.compute_output_shape(shape)

    def call(self, inputs, training=None):
        classes = inputs.shape[-1] // self.capsule_dim
        x = ops.sum(ops.reshape(inputs, (ops.shape(inputs)[0], classes, self.capsule_dim)), axis=1)
        for layer in self.stack:
            x = layer(x, training=training) if isinstance(layer, keras.layers.BatchNormalization) else layer(x)
        return x

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + self.image_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "image_shape": self.image_shape,
                "capsule_dim": self.capsule_dim,
                "base": self.base,
                "filters": self.filters,
                "weight_decay": self.weight_decay,
            }
        )
        return config
