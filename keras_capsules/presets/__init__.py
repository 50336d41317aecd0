"""Pretrained weights for the applications: ``EffCapsNet(weights="mnist")``.

- :func:`available` lists the presets, :func:`get` returns one's record (:func:`find` the one a ``MODEL/NAME`` string names) (accuracy on the full test
  set, how it was trained, file and SHA-256, class names), :func:`model_card` renders it as Markdown.
- :func:`decode_predictions` names a model's top classes: ``"T-shirt/top"``, not ``0``.
- :func:`save` writes a trained model as a preset folder (config, weights and their SHA-256, class names,
  preprocessing, the run's metrics, a model card); :func:`load` and ``MODEL(weights=folder)`` read it
  through the code that loads the library's own presets. :func:`class_names_of` gives a model's class names.
- :func:`open_model` opens the model a command-line argument names: a preset (``"EffCapsNet/mnist"``), a
  preset folder or a ``.keras`` file.
- Files ship inside the package; :func:`search_dirs` gives the lookup order; :func:`download` is
  the only path that fetches a file (for presets that carry a URL).
- :func:`save_weights` / :func:`load_weights` read and write the preset file format (weights keyed
  by layer name, so one file serves the full model, the model without decoder and the backbone).
"""

from keras_capsules.presets.cards import model_card, model_cards
from keras_capsules.presets.class_names import class_names_of
from keras_capsules.presets.constructor import with_presets
from keras_capsules.presets.folders import PresetFolder, is_preset_folder, save
from keras_capsules.presets.models import load, open_model
from keras_capsules.presets.predictions import decode_predictions
from keras_capsules.presets.registry import (
    Preset,
    available,
    download,
    find,
    get,
    is_preset,
    locate,
    register_preset,
    search_dirs,
    unregister_preset,
)
from keras_capsules.presets.weights_file import PresetFileError, load_weights, save_weights, sha256

__all__ = [
    "Preset",
    "PresetFileError",
    "PresetFolder",
    "available",
    "class_names_of",
    "decode_predictions",
    "download",
    "find",
    "get",
    "is_preset",
    "is_preset_folder",
    "load",
    "load_weights",
    "locate",
    "model_card",
    "model_cards",
    "open_model",
    "register_preset",
    "save",
    "save_weights",
    "search_dirs",
    "sha256",
    "unregister_preset",
    "with_presets",
]
