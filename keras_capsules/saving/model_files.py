"""``.keras`` model files and weights files: saved atomically, loaded with errors that name the file.

This module imports no application: ``import keras_capsules`` registers the library's Keras classes as
soon as Keras is imported (``keras_capsules._keras_import``), so :func:`load_model` finds them.
"""

import json
import os
import zipfile

import keras

from keras_capsules.saving import atomic


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

    The library's layers and models are registered with Keras, so no ``custom_objects`` are needed.

    Raises:
        ModelFileError: naming ``path``, when it is missing, not a ``.keras`` archive, truncated (its
            ``config.json`` or weights), without weights, or otherwise not loadable (Keras' reason follows).
    """
    _check_file("load_model", path)
    if not zipfile.is_zipfile(path):
        raise ModelFileError(
            f"load_model: {path!r} is not a .keras archive (truncated or corrupt); save the model again."
        )
    try:
        return keras.saving.load_model(path, compile=compile)
    except json.JSONDecodeError as error:
        raise ModelFileError(
            f"load_model: {path!r} is truncated or corrupt (its config.json is not valid JSON: {error}); save the model again."
        ) from None
    except (zipfile.BadZipFile, OSError, KeyError, EOFError) as error:
        raise ModelFileError(f"load_model: {path!r} is truncated or corrupt ({error}); save the model again.") from None
    except ValueError as error:
        raise ModelFileError(f"load_model: {path!r} could not be loaded ({error}).") from None


def _check_file(function, path):
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{function}: argument `path` expected a file path (str or os.PathLike), received {path!r}.")
    if not os.path.isfile(path):
        raise ModelFileError(f"{function}: no such file {os.fspath(path)!r}.")


def load_weights_file(model, path):
    """Loads the weights file ``path`` (``.weights.h5`` or ``.keras``) into ``model``, reporting bad files by name.

    Raises:
        ModelFileError: naming ``path``, when it is missing, truncated, corrupt, or holds weights that do
            not fit ``model`` (Keras' reason follows).
    """
    _check_file("load_weights", path)
    try:
        model.load_weights(path)
    except (zipfile.BadZipFile, OSError, KeyError, EOFError, ValueError) as error:
        raise ModelFileError(
            f"load_weights: {os.fspath(path)!r} could not be loaded into {model.name!r}: it is truncated, corrupt or made "
            f"for another model ({error})."
        ) from None
    return model
