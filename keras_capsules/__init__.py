"""keras-capsules: capsule networks and GLOM for Keras 3.

Subpackages: ``ops``, ``routing``, ``layers``, ``losses``, ``metrics``, ``saving``, ``presets``,
``applications`` (backend-agnostic) and ``datasets``, ``recipes``, ``training``, ``export``, ``interpret``,
``tuning``, ``evaluation`` (TensorFlow-specific where they say so), each imported on first use. ``import keras_capsules``
imports neither Keras nor TensorFlow; the Keras subpackages follow as soon as Keras is imported, so
``keras.saving.load_model`` finds the library's classes after ``import keras_capsules``.
"""

import importlib

from keras_capsules._keras_import import import_with_keras
from keras_capsules.version import __version__

_WITH_KERAS = ("ops", "routing", "layers", "losses", "applications")
_LAZY = (
    *_WITH_KERAS,
    "saving",
    "presets",
    "datasets",
    "recipes",
    "training",
    "export",
    "interpret",
    "tuning",
    "metrics",
    "evaluation",
)
import_with_keras(__name__, _WITH_KERAS)


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f"keras_capsules.{name}")
    raise AttributeError(f"module 'keras_capsules' has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_LAZY})


__all__ = ["__version__", *_LAZY]
