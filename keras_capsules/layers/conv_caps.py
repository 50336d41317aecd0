"""Convolutional capsule layer."""

import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import check_activations_shape, unpack_capsules, unpack_shapes
from keras_capsules.layers.routed_capsules import RoutedCapsules
from keras_capsules.serialization import register


def output_size(size, kernel_size, strides, padding):
    """Spatial output size of a convolution (TensorFlow's VALID/SAME rules)."""
    if padding == "valid":
        return (size - kernel_size) // strides + 1
    return -(-size // strides)


def patch_indices(height, width, kernel_size, strides, padding):
    """Flat input indices of every receptive field, and the padding applied first.

    Returns:
        ``(indices, (pad_top, pad_bottom, pad_left, pad_right), padded_width)`` where ``indices`` is an
        int32 array ``(out_h * out_w * K * K,)`` into the padded ``(H_pad * W_pad)`` grid, ordered by
        output position then kernel offset (row, column).
    """
    out_h = output_size(height, kernel_size, strides, padding)
    out_w = output_size(width, kernel_size, strides, padding)
    pads = (0, 0, 0, 0)
    if padding == "same":
        pad_h = max((out_h - 1) * strides + kernel_size - height, 0)
        pad_w = max((out_w - 1) * strides + kernel_size - width, 0)
        pads = (pad_h // 2, pad_h - pad_h // 2, pad_w // 2, pad_w - pad_w // 2)
    padded_width = width + pads[2] + pads[3]
    rows = (np.arange(out_h) * strides)[:, None, None, None] + np.arange(kernel_size)[None, None, :, None]
    cols = (np.arange(out_w) * strides)[None, :, None, None] + np.arange(kernel_size)[None, None, None, :]
    return (rows * padded_width + cols).reshape(-1).astype("int32"), pads, padded_width


@register
class ConvCaps(RoutedCapsules):
    """Convolutional capsules: each output position routes the children of its ``K x K`` receptive field.

    The receptive fields are gathered once with one index gather (no per-parent copies of the input);
    output positions are folded into the batch axis, so every router works unchanged and parents at
    different positions do not compete (the apple/IDPA convention; EM's cross-position normalisation
    is an option of the EM router). The transform weights depend on the kernel offset, the input type
    and the output type and are shared across positions.

    Inputs: poses ``(batch, H, W, in_types, in_dim)``, optionally paired with activations
    ``(batch, H, W, in_types)``. Zero padding (``padding="same"``) adds children with zero poses and
    zero activations.

    Outputs: ``(poses, activations)``: ``(batch, H_out, W_out, num_capsules, capsule_dim)`` and
    ``(batch, H_out, W_out, num_capsules)``; with ``return_coupling=True`` also the coupling
    ``(batch * H_out * W_out, K*K*in_types, num_capsules)``, children ordered (kernel row, kernel
    column, type).

    Args:
        kernel_size: receptive field ``K``.
        strides: stride ``s``.
        padding: ``"valid"`` (the papers) or ``"same"``.
        Other arguments: see :class:`~keras_capsules.layers.routed_capsules.RoutedCapsules`.
    """

    def __init__(self, num_capsules, capsule_dim=None, kernel_size=3, strides=1, padding="valid", **kwargs):
        super().__init__(num_capsules, capsule_dim, **kwargs)
        self.kernel_size = errors.check_positive_int(self, "kernel_size", kernel_size)
        self.strides = errors.check_positive_int(self, "strides", strides)
        self.padding = errors.check_one_of(self, "padding", padding, ("valid", "same"))

    def build(self, input_shape):
        poses_shape, acts_shape = unpack_shapes(self, input_shape)
        errors.check_rank(self, "inputs", poses_shape, 5, "(batch, H, W, types, capsule_dim)")
        check_activations_shape(self, poses_shape, acts_shape)
        _, height, width, types, in_dim = poses_shape
        if None in (height, width, types, in_dim):
            errors.fail(self, "inputs", "fully defined H, W, types and capsule_dim", f"shape {poses_shape}")
        if self.padding == "valid" and (height < self.kernel_size or width < self.kernel_size):
            errors.fail(self, "inputs", f"H and W of at least kernel_size={self.kernel_size} with padding='valid'", f"shape {poses_shape}")
        indices, self._pads, _ = patch_indices(height, width, self.kernel_size, self.strides, self.padding)
        self._indices = indices
        self.output_grid = (
            output_size(height, self.kernel_size, self.strides, self.padding),
            output_size(width, self.kernel_size, self.strides, self.padding),
        )
        self.build_routing((None, self.kernel_size * self.kernel_size * types, in_dim))

    def _gather(self, grid):
        """``(batch, H, W, types, ...)`` -> ``(batch * H_out * W_out, K*K*types, ...)``."""
        top, bottom, left, right = self._pads
        if any(self._pads):
            widths = [(0, 0), (top, bottom), (left, right)] + [(0, 0)] * (len(grid.shape) - 3)
            grid = ops.pad(grid, widths)
        batch = ops.shape(grid)[0]
        trailing = tuple(grid.shape[3:])
        flat = ops.reshape(grid, (batch, grid.shape[1] * grid.shape[2]) + trailing)
        patches = ops.take(flat, self._indices, axis=1)
        children = self.kernel_size * self.kernel_size * trailing[0]
        out_h, out_w = self.output_grid
        return ops.reshape(patches, (batch * out_h * out_w, children) + trailing[1:])

    def call(self, inputs, training=None, return_coupling=False):
        poses, activations = unpack_capsules(self, inputs)
        batch = ops.shape(poses)[0]
        children = self._gather(poses)
        child_acts = None if activations is None else self._gather(activations)
        outputs = self.route_children(children, child_acts, training, return_coupling)
        out_h, out_w = self.output_grid
        out_poses = ops.reshape(outputs[0], (batch, out_h, out_w, self.num_capsules, self.out_dim))
        out_acts = ops.reshape(outputs[1], (batch, out_h, out_w, self.num_capsules))
        return (out_poses, out_acts) + tuple(outputs[2:])

    def get_config(self):
        config = super().get_config()
        config.update({"kernel_size": self.kernel_size, "strides": self.strides, "padding": self.padding})
        return config
