"""``open_model``: the model a command-line argument names, a ``.keras`` file or a preset."""

import os
from typing import Any

from keras_capsules.presets import registry
from keras_capsules.presets.constructor import build_preset
from keras_capsules.saving import load_model


def open_model(text: str) -> tuple[Any, tuple[str, str] | None] | None:
    """The model ``text`` names, with its preset key.

    Returns:
        ``(model, (model name, preset name))`` for a preset written ``MODEL/NAME`` or ``MODEL:NAME``
        (any case; the application built with those weights), ``(model, None)`` for a ``.keras`` file
        (loaded uncompiled), or ``None`` when ``text`` names neither.

    Raises:
        keras_capsules.saving.ModelFileError: ``text`` names a missing, truncated or corrupt ``.keras`` file.
    """
    if text.endswith(".keras") or os.path.isfile(text):
        return load_model(text, compile=False), None
    key = registry.find(text)
    if key is None:
        return None
    return build_preset(*key), key
