"""Model files: ``.keras`` saving/loading and SavedModel export, written atomically, with clear errors.

A SavedModel exported here is standalone: ``tf.saved_model.load(path).serve(images)`` works in a
process without ``keras_capsules`` (or Keras) installed.
"""

import os
import zipfile

import keras

from keras_capsules.training import atomic


class ModelFileError(ValueError):
    """A model file is missing, truncated, corrupt, or not a Keras model."""


def save_model(model, path):
    """Saves ``model`` to the ``.keras`` file ``path`` atomically."""
    if not str(path).endswith(".keras"):
        raise ValueError(f"save_model: argument `path` expected a file name ending in '.keras', received {path!r}.")
    with atomic.atomic_file(path, suffix=".keras") as temporary:
        model.save(temporary)
    return path


def load_model(path, compile=True):
    """Loads a ``.keras`` file, reporting missing, truncated or corrupt files by name.

    Importing this module registers every ``keras_capsules`` layer, so no ``custom_objects`` are needed.
    """
    import keras_capsules.applications  # noqa: F401  (registers the library's layers and models)

    if not os.path.isfile(path):
        raise ModelFileError(f"load_model: no such file {path!r}.")
    if not zipfile.is_zipfile(path):
        raise ModelFileError(f"load_model: {path!r} is not a .keras archive (truncated or corrupt); save the model again.")
    try:
        return keras.saving.load_model(path, compile=compile)
    except (zipfile.BadZipFile, OSError, KeyError, EOFError) as error:
        raise ModelFileError(f"load_model: {path!r} is truncated or corrupt ({error}); save the model again.") from None


def export_saved_model(model, path):
    """Exports ``model`` to the SavedModel folder ``path`` atomically (endpoints ``serve`` and ``serving_default``).

    TensorFlow-specific. An existing folder at ``path`` is replaced only once the new export is complete.
    """
    with atomic.atomic_directory(path) as temporary:
        model.export(temporary, format="tf_saved_model", verbose=False)
    return path


def export_keras_file(model_path, output_dir):
    """Exports the ``.keras`` file ``model_path`` to a SavedModel in ``output_dir`` (``keras-capsules export``)."""
    return export_saved_model(load_model(model_path, compile=False), output_dir)
