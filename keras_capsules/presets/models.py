"""The model a name or a path names: ``load`` (a preset folder) and ``open_model`` (a command-line argument)."""

import os
from typing import Any

import keras

from keras_capsules.presets import folders, registry
from keras_capsules.presets.constructor import build_preset
from keras_capsules.saving import load_model


def load(folder: str | os.PathLike) -> Any:
    """The model of the preset folder ``folder`` (written by :func:`~keras_capsules.presets.save`), with its weights and class names.

    A folder that records an application constructor is built through it, exactly as
    ``applications.<constructor>(weights=folder)`` builds it (with every recorded argument); one that
    holds a Keras config is deserialised, then given its weights. The folder is all it needs: no
    training files, no ``.keras`` file.

    Raises:
        keras_capsules.presets.PresetFileError: ``folder`` is not a preset folder, a file is missing or
            corrupt, or the weights file's SHA-256 differs from the recorded one (the message names the file).
    """
    record = folders.read(folder)
    if record.model is not None:
        return build_preset(record.model, record.path)
    model = keras.saving.deserialize_keras_object(record.keras_config)
    return folders.load_into(model, record)


def open_model(text: str) -> tuple[Any, tuple[str, str] | None] | None:
    """The model ``text`` names, with its preset key.

    Returns:
        ``(model, (model name, preset name))`` for a preset written ``MODEL/NAME`` or ``MODEL:NAME``
        (any case; the application built with those weights), ``(model, None)`` for a ``.keras`` file
        (loaded uncompiled) or a preset folder (:func:`load`), or ``None`` when ``text`` names none of them.

    Raises:
        keras_capsules.saving.ModelFileError: ``text`` names a missing, truncated or corrupt ``.keras`` file.
        keras_capsules.presets.PresetFileError: ``text`` names a preset folder with a missing or corrupt file.
    """
    if text.endswith(".keras") or os.path.isfile(text):
        return load_model(text, compile=False), None
    key = registry.find(text)
    if key is not None:
        return build_preset(*key), key
    if folders.is_preset_folder(text):
        return load(text), None
    return None
