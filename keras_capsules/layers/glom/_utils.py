"""Shared helpers of the GLOM layers: locality masks, window partitions (L2 normalisation and grid shapes come from ``ops``)."""

import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import as_float
from keras_capsules.ops.normalize import l2_normalize  # noqa: F401  (the GLOM layers call _utils.l2_normalize)
from keras_capsules.ops.patches import resolve_grid  # noqa: F401  (the GLOM layers call _utils.resolve_grid)

#: Value written on the self-similarity diagonal when columns do not attend to themselves (the code's ``TOKEN_ATTEND_SELF_VALUE``).
SELF_SIMILARITY = 5e-4
#: Large finite negative used instead of ``-inf`` for masked logits (a fully masked row gives a uniform softmax, never NaN).
MASK_VALUE = -1e9


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
    """``(batch, N, d)`` -> ``(batch, N, 1, d)``; ``(batch, N, L, d)`` passes (integers cast to ``owner``'s compute dtype). Returns ``(x, squeezed)``."""
    x = as_float(owner, x)
    rank = len(x.shape)
    if rank == 3:
        return ops.expand_dims(x, 2), True
    if rank == 4:
        return x, False
    errors.fail(
        owner, "inputs", "a tensor of rank 3 (batch, N, d) or 4 (batch, N, levels, d)", f"shape {tuple(x.shape)}"
    )


def partition_windows(x, grid, window):
    """``(batch, h*w, d)`` tokens -> ``(batch, (h/p)*(w/p), p*p, d)`` non-overlapping ``p x p`` windows, row-major."""
    h, w = grid
    d = x.shape[-1]
    x = ops.reshape(x, (-1, h // window, window, w // window, window, d))
    x = ops.transpose(x, (0, 1, 3, 2, 4, 5))
    return ops.reshape(x, (-1, (h // window) * (w // window), window * window, d))
