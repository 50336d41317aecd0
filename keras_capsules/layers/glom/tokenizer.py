"""GLOM input stage (docs/reference/glom.md#tokenizer): the convolutional tokenizer and the patch embedding."""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import as_float
from keras_capsules.serialization import register


@register
class ConvTokenizer(keras.layers.Layer):
    """Convolutional tokenizer of the agreement-aware GLOM (Zeng et al.; Agglomerator code base).

    ``Conv 3x3 s2 (C -> e/2) -> Conv 3x3 (e/2 -> 2e) -> Conv 3x3 (2e -> 2e) -> Conv 3x3 (2e -> e)``,
    each without bias and followed by BatchNorm and ReLU, then ``MaxPool 3x3 s2``. Padding is the
    code's symmetric 1 pixel (``ZeroPadding2D`` + ``"valid"``; zero padding before the max pool equals
    PyTorch's ``-inf`` padding because its input is post-ReLU), so a 32x32 image gives an 8x8 map.
    BatchNorm uses PyTorch's momentum 0.1 (Keras 0.9) and epsilon 1e-5.

    Input: images ``(batch, H, W, C)``. Output: ``(batch, ceil(ceil(H/2)/2), ceil(ceil(W/2)/2), embedding_dim)``.

    Parameters for ``embedding_dim=128`` and 3 channels: 1,035,328 trainable (+1,408 BatchNorm statistics).

    Args:
        embedding_dim: output channels ``e`` (the code's ``patch_dim // patch_size**2``).
        kernel_initializer: of the four convolutions.
    """

    def __init__(
        self,
        embedding_dim: int = 128,
        kernel_initializer: str | keras.initializers.Initializer = "he_uniform",
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.embedding_dim = errors.check_positive_int(self, "embedding_dim", embedding_dim, minimum=2)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        widths = (embedding_dim // 2, embedding_dim * 2, embedding_dim * 2, embedding_dim)
        self.stack = []
        for i, width in enumerate(widths):
            self.stack += [
                keras.layers.ZeroPadding2D(1, name=f"pad_{i}", dtype=self.dtype_policy),
                keras.layers.Conv2D(
                    width,
                    3,
                    strides=2 if i == 0 else 1,
                    use_bias=False,
                    kernel_initializer=self.kernel_initializer,
                    name=f"conv_{i}",
                    dtype=self.dtype_policy,
                ),
                keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5, name=f"bn_{i}", dtype=self.dtype_policy),
                keras.layers.ReLU(name=f"relu_{i}", dtype=self.dtype_policy),
            ]
        self.stack += [
            keras.layers.ZeroPadding2D(1, name="pool_pad", dtype=self.dtype_policy),
            keras.layers.MaxPooling2D(3, strides=2, name="pool", dtype=self.dtype_policy),
        ]

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 4, "(batch, H, W, channels)")
        shape = tuple(input_shape)
        for layer in self.stack:
            layer.build(shape)
            shape = layer.compute_output_shape(shape)

    def call(self, inputs, training=None):
        if inputs.shape[0] == 0:
            # TensorFlow's conv2d returns an empty batch with its input's shape, not the output's.
            return ops.zeros((0,) + self.compute_output_shape(inputs.shape)[1:], dtype=self.compute_dtype)
        x = as_float(self, inputs)
        for layer in self.stack:
            x = layer(x, training=training) if isinstance(layer, keras.layers.BatchNormalization) else layer(x)
        return x

    def compute_output_shape(self, input_shape):
        def size(n):
            return None if n is None else -(-(-(-n // 2)) // 2)

        return (input_shape[0], size(input_shape[1]), size(input_shape[2]), self.embedding_dim)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "embedding_dim": self.embedding_dim,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            }
        )
        return config


@register
class PatchEmbedding(keras.layers.Layer):
    """Cuts a feature map into ``r x r`` patches and flattens each into one column embedding.

    Input: ``(batch, H', W', c')``. Output: ``(batch, (H'/r) * (W'/r), r*r*c')``, patches in row-major
    order; inside a patch the features are ordered ``(c', row, col)`` as in the code's
    ``'b d (h p1) (w p2) -> b (h w) (d p1 p2)'``. With ``r = 1`` (the paper) every position is a column.

    Args:
        patch_size: ``r``; must divide ``H'`` and ``W'``.
    """

    def __init__(self, patch_size: int = 1, **kwargs) -> None:
        super().__init__(**kwargs)
        self.patch_size = errors.check_positive_int(self, "patch_size", patch_size)

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 4, "(batch, H, W, channels)")
        for size in input_shape[1:3]:
            if size is None or size % self.patch_size:
                errors.fail(
                    self,
                    "inputs",
                    f"a feature map with known height and width divisible by patch_size={self.patch_size}",
                    f"shape {tuple(input_shape)}",
                )

    def call(self, inputs):
        _, height, width, channels = inputs.shape
        r = self.patch_size
        x = ops.reshape(inputs, (-1, height // r, r, width // r, r, channels))
        x = ops.transpose(x, (0, 1, 3, 5, 2, 4))
        return ops.reshape(x, (-1, (height // r) * (width // r), channels * r * r))

    def compute_output_shape(self, input_shape):
        r = self.patch_size
        return (input_shape[0], (input_shape[1] // r) * (input_shape[2] // r), input_shape[3] * r * r)

    def get_config(self):
        config = super().get_config()
        config["patch_size"] = self.patch_size
        return config
