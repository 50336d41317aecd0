"""GLOM column networks (docs/reference/glom.md#column-networks): one MLP per level, shared by every column, LayerNorm over the patch axis."""

import math

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import as_float
from keras_capsules.ops.norms import rescaled
from keras_capsules.serialization import register

ACTIVATIONS = ("gelu", "sin", "relu", "linear")


def _activation(name, x):
    if name == "gelu":
        return ops.gelu(x, approximate=False)  # PyTorch nn.GELU is the exact (erf) form
    if name == "sin":
        return ops.sin(x)  # the code's ``Siren``: a bare sin, no w0 factor
    if name == "relu":
        return ops.relu(x)
    return x


@register
class ColumnMLP(keras.layers.Layer):
    """Grouped per-level MLP: the bottom-up (``N_BU``) and top-down (``N_TD``) networks of GLOM.

    ``groups`` separate MLPs (one per level) applied to every column, each ``depth`` layers of
    ``LayerNorm -> Linear`` with ``activation`` after all but the last Linear. As in the code (a
    grouped 1x1 ``Conv1d`` after ``Rearrange('b n l d -> b (l d) n')``), the LayerNorm normalises
    **over the patch axis** (per level and channel) and its scale and offset have one entry per
    patch, shared by all channels; the paper describes "two FC layers" instead, the code has four.
    The LayerNorm is computed on the centred values divided by their largest magnitude (the same
    function, but no squared value can overflow for any finite input). Linear layers use PyTorch's default initialisation ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` (kernel
    and bias), which matters for the sin activation.

    Input: ``(batch, N, groups, d)``. Output: ``(batch, N, groups, d)``.

    Parameters (depth >= 2): ``depth * (N LayerNorm: 2N) + groups * (d*h + h + (depth-2)*(h*h + h) + h*d + d)`` with
    ``h = hidden_multiplier * d`` (132,608 for N = 64, d = 128, 2 groups, depth 4).

    Args:
        groups: number of levels handled (K for bottom-up, K - 1 for top-down).
        depth: Linear layers per MLP (code: 4).
        activation: ``"gelu"`` (bottom-up), ``"sin"`` (top-down), ``"relu"`` or ``"linear"``.
        hidden_multiplier: hidden width as a multiple of ``d`` (code: 1).
        epsilon: LayerNorm epsilon (PyTorch's 1e-5).
    """

    def __init__(
        self,
        groups: int,
        depth: int = 4,
        activation: str = "gelu",
        hidden_multiplier: int = 1,
        epsilon: float = 1e-5,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.groups = errors.check_positive_int(self, "groups", groups)
        self.depth = errors.check_positive_int(self, "depth", depth)
        self.activation = errors.check_one_of(self, "activation", activation, ACTIVATIONS)
        self.hidden_multiplier = errors.check_positive_int(self, "hidden_multiplier", hidden_multiplier)
        self.epsilon = float(epsilon)

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 4, "(batch, N, groups, d)")
        errors.check_dim(self, "inputs", input_shape, 2, self.groups, "groups")
        num_patches, dim = input_shape[1], input_shape[3]
        if num_patches is None or dim is None:
            errors.fail(
                self, "inputs", "known N and d (the LayerNorm has one scale per patch)", f"shape {tuple(input_shape)}"
            )
        hidden = self.hidden_multiplier * dim
        widths = [dim] + [hidden] * (self.depth - 1) + [dim]
        self.norm_scales, self.norm_offsets, self.kernels, self.biases = [], [], [], []
        for i in range(self.depth):
            fan_in, fan_out = widths[i], widths[i + 1]
            bound = 1.0 / math.sqrt(fan_in)
            init = keras.initializers.RandomUniform(-bound, bound)
            self.norm_scales.append(self.add_weight(name=f"norm_{i}_gamma", shape=(num_patches,), initializer="ones"))
            self.norm_offsets.append(self.add_weight(name=f"norm_{i}_beta", shape=(num_patches,), initializer="zeros"))
            self.kernels.append(
                self.add_weight(name=f"kernel_{i}", shape=(self.groups, fan_in, fan_out), initializer=init)
            )
            self.biases.append(self.add_weight(name=f"bias_{i}", shape=(self.groups, fan_out), initializer=init))

    def call(self, inputs):
        x = as_float(self, inputs)
        batch, num_patches = ops.shape(x)[0], x.shape[1]
        # Every layer runs on (groups, batch, N, width): the LayerNorm reduces axis 2 and each group's
        # Linear is one batched matrix product, (groups, batch * N, i) @ (groups, i, o), with a single
        # transpose in and out (an einsum per layer transposed its operands on every call, and its
        # gradient again).
        x = ops.transpose(x, (2, 0, 1, 3))
        for i in range(self.depth):
            centred, scale = rescaled(x - ops.mean(x, axis=2, keepdims=True), axis=2)
            var = ops.mean(ops.square(centred), axis=2, keepdims=True)
            x = centred * ops.rsqrt(var + self.epsilon / ops.square(scale))
            x = x * self.norm_scales[i][None, None, :, None] + self.norm_offsets[i][None, None, :, None]
            fan_in, fan_out = self.kernels[i].shape[1:]
            x = ops.matmul(ops.reshape(x, (self.groups, -1, fan_in)), self.kernels[i]) + self.biases[i][:, None, :]
            x = ops.reshape(x, (self.groups, batch, num_patches, fan_out))
            if i < self.depth - 1:
                x = _activation(self.activation, x)
        return ops.transpose(x, (1, 2, 0, 3))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "groups": self.groups,
                "depth": self.depth,
                "activation": self.activation,
                "hidden_multiplier": self.hidden_multiplier,
                "epsilon": self.epsilon,
            }
        )
        return config
