"""Pure tensor and index functions shared by the layers, routers, losses and metrics (``keras.ops`` only, any backend).

Nothing here imports from ``layers``, ``routing`` or above, so every module may depend on ``ops``.
"""

from keras_capsules.ops.dtypes import LOW_PRECISION, dtype_max
from keras_capsules.ops.normalize import l2_normalize
from keras_capsules.ops.norms import capsule_length, safe_norm
from keras_capsules.ops.patches import output_size, patch_indices, resolve_grid
from keras_capsules.ops.quantize import quantize_bins, quantize_uniform
from keras_capsules.ops.remat import recomputation
from keras_capsules.ops.squash import get_squash, squash, squash_efficient

__all__ = [
    "LOW_PRECISION",
    "capsule_length",
    "dtype_max",
    "get_squash",
    "l2_normalize",
    "output_size",
    "patch_indices",
    "quantize_bins",
    "quantize_uniform",
    "recomputation",
    "resolve_grid",
    "safe_norm",
    "squash",
    "squash_efficient",
]
