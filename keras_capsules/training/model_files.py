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


def check_output_folder(path, *, overwrite=False, inputs=(), what="output folder"):
    """Refuses to write a folder where that would destroy something the user did not ask to replace.

    Args:
        path: the folder about to be written (created, or replaced as a whole).
        overwrite: allow replacing an existing non-empty folder.
        inputs: files or folders being read (the model being exported): never inside ``path``,
            whatever ``overwrite`` says.
        what: how error messages name ``path``.

    Raises:
        ValueError: ``path`` is an existing file, the current folder or one of its parents, a folder
            holding one of ``inputs``, or a non-empty folder while ``overwrite`` is false.
    """
    target = os.path.realpath(path)
    if os.path.isfile(target) or (os.path.exists(target) and not os.path.isdir(target)):
        raise ValueError(f"{what} {path!r} is an existing file, not a folder; choose another name (nothing was written).")
    cwd = os.path.realpath(os.getcwd())
    if cwd == target or cwd.startswith(target + os.sep):
        raise ValueError(f"{what} {path!r} is the current folder or one of its parents; name a new folder such as {os.path.join(path, 'export')!r}.")
    for item in inputs:
        source = os.path.realpath(item)
        if source == target or source.startswith(target + os.sep):
            raise ValueError(
                f"{what} {path!r} holds the input {item!r}, which replacing it would delete; name a new folder "
                f"such as {os.path.join(path, 'export')!r}."
            )
    if os.path.isdir(target) and os.listdir(target) and not overwrite:
        raise ValueError(f"{what} {path!r} exists and is not empty; pass overwrite=True (CLI: --overwrite) to replace it, or choose another name.")


def export_saved_model(model, path, overwrite=False):
    """Exports ``model`` to the SavedModel folder ``path`` atomically (endpoints ``serve`` and ``serving_default``).

    TensorFlow-specific. The export is written to a temporary sibling and renamed into place; an
    existing non-empty folder at ``path`` is replaced only with ``overwrite=True``, and only once the
    new export is complete. An existing file at ``path`` is never replaced.
    """
    check_output_folder(path, overwrite=overwrite, what="export_saved_model: argument `path`")
    with atomic.atomic_directory(path) as temporary:
        model.export(temporary, format="tf_saved_model", verbose=False)
    return path


def export_keras_file(model_path, output_dir, overwrite=False):
    """Exports the ``.keras`` file ``model_path`` to a SavedModel in ``output_dir`` (``keras-capsules export``).

    ``output_dir`` may not hold ``model_path`` (that would delete the model) and an existing non-empty
    ``output_dir`` is replaced only with ``overwrite=True``; both are checked before the model is loaded.
    """
    check_output_folder(output_dir, overwrite=overwrite, inputs=(model_path,), what="export: OUTPUT_DIR")
    return export_saved_model(load_model(model_path, compile=False), output_dir, overwrite=overwrite)
