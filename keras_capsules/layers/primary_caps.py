"""Primary capsules: a convolution whose channels are grouped into capsules."""

import math
import numbers

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import as_float
from keras_capsules.ops.norms import limit_magnitude, safe_norm
from keras_capsules.ops.squash import squash, squash_efficient
from keras_capsules.serialization import register

ACTIVATIONS = ("squash", "squash_efficient", "layer_norm", "sigmoid", "linear")


def _conv_size(owner, argument, value):
    """A positive integer or a pair of them (``kernel_size``, ``strides``); returned as int or tuple."""
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            errors.fail(owner, argument, "a positive integer or a pair of them", value)
        return tuple(errors.check_positive_int(owner, argument, v) for v in value)
    return errors.check_positive_int(owner, argument, value)


def _convolve(conv, inputs):
    """``conv(inputs)``; for a (static) empty batch, the empty output of the right shape.

    TensorFlow's conv2d returns an empty batch with the input's spatial shape instead of the output's.
    """
    if inputs.shape[0] == 0:
        return ops.zeros((0,) + tuple(conv.compute_output_shape(inputs.shape)[1:]), dtype=conv.compute_dtype)
    return conv(inputs)


@register
class PrimaryCaps(keras.layers.Layer):
    """Convolution (or depthwise convolution) reshaped into ``num_capsules`` capsules per position.

    Inputs: a feature map ``(batch, H, W, channels)``.

    Outputs: ``(poses, activations)``: ``(batch, H_out, W_out, num_capsules, capsule_dim)`` and
    ``(batch, H_out, W_out, num_capsules)``.

    ``activation`` picks how poses and activations are made:

    - ``"squash"`` (Sabour) / ``"squash_efficient"`` (Efficient-CapsNet): squashed poses; the
      activation is the pose length (the documented proxy).
    - ``"layer_norm"``: LayerNorm over each capsule's entries (epsilon 1e-5, PyTorch's default;
      inverted dot-product attention); activations are ones (those capsules have none).
    - ``"sigmoid"``: linear poses plus a second convolution with ``num_capsules`` sigmoid
      activations (matrix capsules with EM routing).
    - ``"linear"``: raw poses; activations are ones.

    Args:
        num_capsules: capsule types per position.
        capsule_dim: pose size (16 for a flat 4x4 matrix).
        kernel_size, strides, padding: of the convolution.
        depthwise: use a depthwise convolution with depth multiplier 1 (Efficient-CapsNet); needs
            ``channels == num_capsules * capsule_dim``.
        activation: one of ``"squash"``, ``"squash_efficient"``, ``"layer_norm"``, ``"sigmoid"``, ``"linear"``.
        use_bias: bias in the pose convolution.
        pose_scale: factor on the convolution before the bias, ``pose = conv(x) * pose_scale + bias``.
            ``1/32`` is Sabour et al.'s official code, whose primary capsules are a one-input
            capsule layer routed once over its 32 types (coupling ``1/32``; EscVM mimics it). With
            a scale other than 1 the bias is a separate ``pose_bias`` weight, ``(num_capsules,
            capsule_dim)``, added after the scale; the parameter count is the same.
        bias_initializer: initializer of the pose bias (the official code's is ``Constant(0.1)``,
            inferred; EscVM's zeros).
        epsilon: squash epsilon.
        kernel_initializer, kernel_regularizer: of the convolution(s).
    """

    def __init__(
        self,
        num_capsules: int,
        capsule_dim: int,
        kernel_size: int | tuple[int, int] = 9,
        strides: int | tuple[int, int] = 1,
        padding: str = "valid",
        depthwise: bool = False,
        activation: str = "squash",
        use_bias: bool = True,
        pose_scale: float = 1.0,
        bias_initializer: str | keras.initializers.Initializer = "zeros",
        epsilon: float = 1e-7,
        kernel_initializer: str | keras.initializers.Initializer = "glorot_uniform",
        kernel_regularizer: str | keras.regularizers.Regularizer | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.num_capsules = errors.check_positive_int(self, "num_capsules", num_capsules)
        self.capsule_dim = errors.check_positive_int(self, "capsule_dim", capsule_dim)
        self.kernel_size = _conv_size(self, "kernel_size", kernel_size)
        self.strides = _conv_size(self, "strides", strides)
        self.padding = errors.check_one_of(self, "padding", padding, ("valid", "same"))
        self.depthwise = bool(depthwise)
        self.activation = errors.check_one_of(self, "activation", activation, ACTIVATIONS)
        self.use_bias = bool(use_bias)
        if isinstance(pose_scale, bool) or not isinstance(pose_scale, numbers.Real) or not 0 < pose_scale < math.inf:
            errors.fail(self, "pose_scale", "a finite number > 0", pose_scale)
        self.pose_scale = float(pose_scale)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.epsilon = float(epsilon)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        conv_args = dict(
            kernel_size=self.kernel_size,
            strides=self.strides,
            padding=padding,
            use_bias=self.use_bias and self.pose_scale == 1.0,  # otherwise the bias comes after the scale
            bias_initializer=self.bias_initializer,
            kernel_regularizer=self.kernel_regularizer,
            dtype=self.dtype_policy,
        )
        if self.depthwise:
            self.pose_conv = keras.layers.DepthwiseConv2D(
                depth_multiplier=1,
                depthwise_initializer=self.kernel_initializer,
                name="pose_conv",
                **{k: v for k, v in conv_args.items() if k != "kernel_regularizer"},
                depthwise_regularizer=self.kernel_regularizer,
            )
        else:
            self.pose_conv = keras.layers.Conv2D(
                self.num_capsules * self.capsule_dim,
                kernel_initializer=self.kernel_initializer,
                name="pose_conv",
                **conv_args,
            )
        self.activation_conv = None
        self.layer_norm = None
        if self.activation == "sigmoid":
            self.activation_conv = keras.layers.Conv2D(
                self.num_capsules,
                activation="sigmoid",
                kernel_initializer=self.kernel_initializer,
                name="activation_conv",
                **{**conv_args, "use_bias": True, "bias_initializer": "zeros"},
            )
        if self.activation == "layer_norm":
            self.layer_norm = keras.layers.LayerNormalization(
                axis=-1, epsilon=1e-5, name="layer_norm", dtype=self.dtype_policy
            )

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 4, "(batch, H, W, channels)")
        channels = input_shape[-1]
        if self.depthwise and channels != self.num_capsules * self.capsule_dim:
            errors.fail(
                self,
                "inputs",
                f"channels = num_capsules * capsule_dim = {self.num_capsules * self.capsule_dim} for depthwise=True",
                f"shape {tuple(input_shape)}",
            )
        errors.check_kernel_fits(self, self.kernel_size, self.padding, input_shape)
        self.pose_conv.build(input_shape)
        self.pose_bias = None
        if self.use_bias and self.pose_scale != 1.0:
            self.pose_bias = self.add_weight(
                name="pose_bias", shape=(self.num_capsules, self.capsule_dim), initializer=self.bias_initializer
            )
        conv_shape = self.pose_conv.compute_output_shape(input_shape)
        if self.activation_conv is not None:
            self.activation_conv.build(input_shape)
        if self.layer_norm is not None:
            self.layer_norm.build(conv_shape[:3] + (self.num_capsules, self.capsule_dim))

    def call(self, inputs):
        inputs = as_float(self, inputs)
        features = _convolve(self.pose_conv, inputs)
        height, width = features.shape[1], features.shape[2]
        batch = ops.shape(features)[0]
        poses = ops.reshape(features, (batch, height, width, self.num_capsules, self.capsule_dim))
        if self.pose_scale != 1.0:
            poses = poses * ops.cast(self.pose_scale, poses.dtype)
            if self.pose_bias is not None:
                poses = poses + ops.cast(self.pose_bias, poses.dtype)
        if self.activation in ("squash", "squash_efficient"):
            fn = squash if self.activation == "squash" else squash_efficient
            poses = fn(poses, epsilon=self.epsilon)
            return poses, safe_norm(poses, epsilon=self.epsilon)
        if self.activation == "sigmoid":
            return poses, _convolve(self.activation_conv, inputs)
        if self.activation == "layer_norm":
            poses = self.layer_norm(limit_magnitude(poses))  # scale-invariant; Keras' LayerNorm overflows beyond ~1e19
        return poses, ops.ones_like(poses[..., 0])

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_capsules": self.num_capsules,
                "capsule_dim": self.capsule_dim,
                "kernel_size": self.kernel_size,
                "strides": self.strides,
                "padding": self.padding,
                "depthwise": self.depthwise,
                "activation": self.activation,
                "use_bias": self.use_bias,
                "pose_scale": self.pose_scale,
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "epsilon": self.epsilon,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
            }
        )
        return config
