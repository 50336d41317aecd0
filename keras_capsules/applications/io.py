"""What goes into an application and what comes out: images scaled to [0, 1], class scores named and ranked."""

from collections.abc import Sequence
from typing import Any

import numpy.typing as npt
from keras import ops

from keras_capsules.presets.predictions import ranked_classes


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """Scales uint8-range images to [0, 1] floats, the input range of every application built with
    ``include_preprocessing=False`` (the default, and what ``keras_capsules.datasets.load`` gives).

    Args:
        x: array or tensor of images with values in [0, 255].
        data_format: accepted for Keras Applications compatibility; images are channels-last.
    """
    del data_format
    return ops.cast(x, "float32") / 255.0


def decode_predictions(
    preds: npt.ArrayLike,
    top: int = 5,
    class_names: Sequence[str] | None = None,
) -> list[list[tuple[int, str, float]]]:
    """Turns class scores into ``[(class_index, class_name, score), ...]`` per example, best first.

    Args:
        preds: ``(batch, classes)`` scores (capsule lengths, probabilities or logits).
        top: how many classes to return per example (at most ``classes``).
        class_names: optional sequence of ``classes`` names; defaults to the class indices as strings
            (``keras_capsules.presets.decode_predictions`` takes them from a dataset or a preset).

    Returns:
        One list per example of ``min(top, classes)`` tuples ``(class index, class name, score)``,
        highest score first (equal scores: lower index first).
    """
    return ranked_classes(preds, top, class_names)
