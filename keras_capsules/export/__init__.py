"""Export (TensorFlow backend): a model's inference graph as a SavedModel folder, an ONNX file or a LiteRT file.

- :func:`export_model`: a model to ``format`` (``"savedmodel"``, ``"onnx"``, ``"litert"``), atomically,
  with a ``ValueError`` naming the layers and ops a format cannot express.
- :func:`export_saved_model`: the SavedModel folder (``serve`` and ``serving_default``).
- :func:`export_keras_file`: a ``.keras`` file, as ``keras-capsules export`` does.

Every export runs without ``keras_capsules`` or Keras. The library's only private Keras / TensorFlow
imports are in ``keras_capsules.export._private_api``.
"""

from keras_capsules.export.formats import (
    CLASS_NAMES_ASSET,
    CLASS_NAMES_KEY,
    EXPORT_FORMATS,
    export_keras_file,
    export_model,
    export_saved_model,
)

__all__ = [
    "CLASS_NAMES_ASSET",
    "CLASS_NAMES_KEY",
    "EXPORT_FORMATS",
    "export_keras_file",
    "export_model",
    "export_saved_model",
]
