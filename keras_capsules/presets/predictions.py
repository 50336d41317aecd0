"""``decode_predictions``: class scores of a preset model turned into named classes, best first."""

from collections.abc import Sequence
from typing import Union

import numpy as np
import numpy.typing as npt

from keras_capsules import errors
from keras_capsules.presets import registry


def ranked_classes(
    preds: npt.ArrayLike, top: int = 5, class_names: Sequence[str] | None = None, argument: str = "preds"
) -> list[list[tuple[int, str, float]]]:
    """``[(class_index, class_name, score), ...]`` per example, best first (equal scores: lower index first).

    What both ``decode_predictions`` share: ``preds`` ``(batch, classes)`` scores, ``class_names`` one per class
    (default: the indices as strings), ``top`` classes per example (at most ``classes``); ``argument`` names
    ``preds`` in errors.
    """
    top = errors.check_positive_int("decode_predictions", "top", top)
    scores = np.asarray(preds)
    if scores.ndim != 2 or not np.issubdtype(scores.dtype, np.number):
        errors.fail("decode_predictions", argument, "a 2-D array (batch, classes) of class scores", f"{scores.dtype} shape {scores.shape}")
    names = [str(i) for i in range(scores.shape[1])] if class_names is None else list(class_names)
    if len(names) != scores.shape[1]:
        errors.fail("decode_predictions", "class_names", f"{scores.shape[1]} names (one per class score)", f"{len(names)} names")
    order = np.argsort(-scores, axis=1, kind="stable")[:, :top]
    return [[(int(i), names[i], float(row[i])) for i in indices] for row, indices in zip(scores, order)]


def _class_names(dataset_or_preset) -> tuple[str, ...]:
    """The class names of a dataset name, a ``"Model/name"`` preset key or a :class:`~keras_capsules.presets.Preset`."""
    if isinstance(dataset_or_preset, registry.Preset):
        return dataset_or_preset.class_names
    if isinstance(dataset_or_preset, str) and "/" in dataset_or_preset:
        model, name = dataset_or_preset.split("/", 1)
        if registry.is_preset(model, name):
            return registry.get(model, name).class_names
        errors.fail("decode_predictions", "dataset_or_preset", f"a dataset name or one of the presets {registry.available()}", dataset_or_preset)
    from keras_capsules import datasets

    if not isinstance(dataset_or_preset, str) or dataset_or_preset not in datasets.available():
        errors.fail(
            "decode_predictions",
            "dataset_or_preset",
            f"a dataset name ({datasets.available()}), a preset key ({registry.available()}) or a Preset",
            dataset_or_preset,
        )
    return datasets.class_names(dataset_or_preset)


def decode_predictions(
    predictions: npt.ArrayLike,
    dataset_or_preset: Union[str, registry.Preset],
    top: int = 5,
) -> list[list[tuple[int, str, float]]]:
    """The ``top`` classes of each example with their names: ``[[(class_index, class_name, score), ...], ...]``.

    Examples:
        >>> model = applications.EffCapsNet(weights="mnist")
        >>> decode_predictions(model.predict(images), "EffCapsNet/mnist", top=3)[0]
        [(7, '7', 0.98...), (2, '2', 0.05...), (3, '3', 0.03...)]

    Args:
        predictions: ``(batch, classes)`` class scores (capsule lengths, probabilities or logits).
        dataset_or_preset: whose class names: a dataset name (``"fashion_mnist"``), a preset key
            (``"EffCapsNet/mnist"``) or a :class:`~keras_capsules.presets.Preset`.
        top: classes per example (at most ``classes``).

    Returns:
        One list per example of ``min(top, classes)`` tuples ``(class index, class name, score)``,
        highest score first (equal scores: lower index first).

    Raises:
        ValueError: ``predictions`` is not 2-D, or its number of classes differs from the names'.
    """
    names = _class_names(dataset_or_preset)
    scores = np.asarray(predictions)
    if scores.ndim != 2 or not np.issubdtype(scores.dtype, np.number):
        errors.fail("decode_predictions", "predictions", "a 2-D array (batch, classes) of class scores", f"{scores.dtype} shape {scores.shape}")
    if scores.shape[1] != len(names):
        errors.fail(
            "decode_predictions",
            "predictions",
            f"{len(names)} class scores per example (the classes of {getattr(dataset_or_preset, 'key', dataset_or_preset)!r})",
            f"shape {scores.shape}",
        )
    return ranked_classes(scores, top, names, argument="predictions")
