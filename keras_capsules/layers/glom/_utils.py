"""Shared helpers of the GLOM layers: safe L2 normalisation, grid shapes, locality masks, window partitions."""

import math

import numpy as np
from keras import ops

from keras_capsules import errors

#: Value written on the self-similarity diagonal when columns do not attend to themselves (the code's ``TOKEN_ATTEND_SELF_VALUE``).
SELF_SIMILARITY = 5e-4
#: Large finite negative used instead of ``-inf`` for masked logits (a fully masked row gives a uniform softmax, never NaN).
MASK_VALUE = -1e9


def l2_normalize(x, axis=-1, epsilon=1e-12):
    """``x / max(||x||, sqrt(epsilon))`` in float32: PyTorch's ``F.normalize`` with a norm floor of 1e-6 (zero vectors stay zero)."""
    x = ops.cast(x, "float32")
    return x * ops.rsqrt(ops.maximum(ops.sum(ops.square(x), axis=axis, keepdims=True), epsilon))


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


def non_local_mask(grid, radius):
    """``(N, N)`` bool NumPy array: True where two grid positions are farther apart than ``radius`` (Euclidean)."""
    rows, cols = np.meshgrid(np.arange(grid[0]), np.arange(grid[1]), indexing="ij")
    coords = np.stack([rows.ravel(), cols.ravel()], axis=-1).astype("float64")
    dist = np.sqrt(((coords[:, None, :] - coords[None, :, :]) ** 2).sum(-1))
    return dist > radius


def eye_mask(num):
    """``(N, N)`` boolean identity as a tensor (the self-similarity diagonal)."""
    return ops.convert_to_tensor(np.eye(num, dtype=bool))


def as_levels(owner, x):
    """``(batch, N, d)`` -> ``(batch, N, 1, d)``; ``(batch, N, L, d)`` passes. Returns ``(x, squeezed)``."""
    rank = len(x.shape)
    if rank == 3:
        return ops.expand_dims(x, 2), True
    if rank == 4:
        return x, False
    errors.fail(owner, "inputs", "a tensor of rank 3 (batch, N, d) or 4 (batch, N, levels, d)", f"shape {tuple(x.shape)}")


def partition_windows(x, grid, window):
    """``(batch, h*w, d)`` tokens -> ``(batch, (h/p)*(w/p), p*p, d)`` non-overlapping ``p x p`` windows, row-major."""
    h, w = grid
    d = x.shape[-1]
    x = ops.reshape(x, (-1, h // window, window, w // window, window, d))
    x = ops.transpose(x, (0, 1, 3, 2, 4, 5))
    return ops.reshape(x, (-1, (h // window) * (w // window), window * window, d))
