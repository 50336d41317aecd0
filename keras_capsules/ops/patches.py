"""Receptive-field index arithmetic of convolutions and grids (NumPy and Python integers, no tensors)."""

import math

import numpy as np

from keras_capsules import errors


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


def resolve_grid(owner, argument, num_patches, grid_shape):
    """Returns ``(h, w)`` with ``h * w == num_patches``; ``None`` means a square grid.

    Raises:
        ValueError: naming ``owner`` and ``argument`` when the grid does not match.
    """
    if grid_shape is None:
        side = int(round(math.sqrt(num_patches)))
        if side * side != num_patches:
            errors.fail(owner, argument, f"a (height, width) grid: {num_patches} patches are not a square", grid_shape)
        return side, side
    grid = tuple(int(g) for g in grid_shape)
    if len(grid) != 2 or grid[0] * grid[1] != num_patches:
        errors.fail(owner, argument, f"a (height, width) grid with height * width = {num_patches} patches", grid_shape)
    return grid
