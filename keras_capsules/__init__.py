"""keras-capsules: capsule networks and GLOM for Keras 3.

Subpackages: ``ops``, ``routing``, ``layers``, ``losses``, ``metrics``, ``applications`` (imported
eagerly, backend-agnostic) and ``datasets``, ``recipes``, ``training``, ``interpret``, ``tuning``
(imported on first use; TensorFlow-specific where they say so).
"""

import importlib

from keras_capsules import applications, layers, losses, ops, routing

__version__ = "0.1.0"

_LAZY = ("datasets", "recipes", "training", "interpret", "tuning", "metrics")


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f"keras_capsules.{name}")
    raise AttributeError(f"module 'keras_capsules' has no attribute {name!r}")


__all__ = ["applications", "layers", "losses", "ops", "routing", "__version__", *_LAZY]
