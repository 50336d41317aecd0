"""Pure tensor functions shared by the layers and routers (``keras.ops`` only, any backend)."""

from keras_capsules.ops.norms import capsule_length, safe_norm
from keras_capsules.ops.quantize import quantize_bins, quantize_uniform
from keras_capsules.ops.squash import get_squash, squash, squash_efficient

__all__ = [
    "capsule_length",
    "get_squash",
    "quantize_bins",
    "quantize_uniform",
    "safe_norm",
    "squash",
    "squash_efficient",
]
