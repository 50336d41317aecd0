"""Model files: ``.keras`` models and weights files written atomically, bad files reported by name.

- :func:`save_model`, :func:`load_model`: ``.keras`` files (saved under a temporary name and renamed into
  place; :class:`ModelFileError` names a missing, truncated or corrupt file).
- :func:`load_weights_file`: a ``.weights.h5`` or ``.keras`` file into a built model.
- :func:`check_output_folder`, :func:`check_output_file`: refuse to write where that would destroy
  something the user did not ask to replace.
- ``keras_capsules.saving.atomic``: atomic files and folders (also used by the training checkpoints).

This package sits below the applications: it imports none of them (``import keras_capsules`` registers
the library's classes with Keras, so :func:`load_model` needs no ``custom_objects``).
"""

from keras_capsules.saving.model_files import ModelFileError, load_model, load_weights_file, save_model
from keras_capsules.saving.output_paths import check_output_file, check_output_folder

__all__ = [
    "ModelFileError",
    "check_output_file",
    "check_output_folder",
    "load_model",
    "load_weights_file",
    "save_model",
]
