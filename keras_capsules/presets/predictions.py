"""``decode_predictions``: class scores turned into named classes, best first (names from a dataset, a preset, a preset folder or a model)."""

import os
from collections.abc import Sequence
from typing import Any, Union

import numpy as np
import numpy.typing as npt

from keras_capsules import errors
from keras_capsules.presets import folders, registry
from keras_capsules.presets.class_names import check_class_names, class_names_of


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
        errors.fail(
            "decode_predictions",
            argument,
            "a 2-D array (batch, classes) of class scores",
            f"{scores.dtype} shape {scores.shape}",
        )
    names = [str(i) for i in range(scores.shape[1])] if class_names is None else list(class_names)
    if len(names) != scores.shape[1]:
        errors.fail(
            "decode_predictions", "class_names", f"{scores.shape[1]} names (one per class score)", f"{len(names)} names"
        )
    order = np.argsort(-scores, axis=1, kind="stable")[:, :top]
    return [[(int(i), names[i], float(row[i])) for i in indices] for row, indices in zip(scores, order)]


def _class_names(dataset_or_preset) -> tuple[str, ...]:
    """The class names of a dataset name, a preset key, a :class:`~keras_capsules.presets.Preset`, a preset folder, a model or a sequence of names.

    A string is a preset key or a dataset name before it is a folder (a data folder named ``mnist`` does not hide the dataset).
    """
    from keras_capsules import datasets

    if isinstance(dataset_or_preset, registry.Preset):
        return dataset_or_preset.class_names
    if isinstance(dataset_or_preset, (list, tuple)):
        return (
            check_class_names("decode_predictions", dataset_or_preset, argument="dataset_or_preset") or ()
        )  # never None for a sequence
    if hasattr(dataset_or_preset, "predict"):  # a model
        names = class_names_of(dataset_or_preset)
        if names is None:
            errors.fail(
                "decode_predictions",
                "dataset_or_preset",
                "a model with class names (set model.class_names, or pass a dataset name)",
                f"model {dataset_or_preset.name!r} without class names",
            )
        return names
    if isinstance(dataset_or_preset, str) and "/" in dataset_or_preset:
        model, name = dataset_or_preset.split("/", 1)
        if registry.is_preset(model, name):
            return registry.get(model, name).class_names
    if isinstance(dataset_or_preset, str) and dataset_or_preset in datasets.available():
        return datasets.class_names(dataset_or_preset)
    if isinstance(dataset_or_preset, (str, os.PathLike)) and os.path.isdir(dataset_or_preset):
        names = folders.read(dataset_or_preset, function="decode_predictions").class_names
        if names is None:
            errors.fail(
                "decode_predictions",
                "dataset_or_preset",
                "a preset folder that records class names",
                os.fspath(dataset_or_preset),
            )
        return names
    if isinstance(dataset_or_preset, str) and "/" in dataset_or_preset:
        errors.fail(
            "decode_predictions",
            "dataset_or_preset",
            f"a dataset name, one of the presets {registry.available()} or a preset folder",
            dataset_or_preset,
        )
    errors.fail(
        "decode_predictions",
        "dataset_or_preset",
        f"a dataset name ({datasets.available()}), a preset key ({registry.available()}), a Preset, a preset folder, a model with class names or a list of names",
        dataset_or_preset,
    )


def _described(source):
    """How errors name where the class names came from: ``model 'eff_capsnet'``, ``'EffCapsNet/mnist'``, ``'fashion_mnist'``."""
    return f"model {source.name!r}" if hasattr(source, "predict") else repr(getattr(source, "key", source))


def decode_predictions(
    predictions: npt.ArrayLike,
    dataset_or_preset: Union[str, os.PathLike, registry.Preset, Sequence[str], Any],
    top: int = 5,
) -> list[list[tuple[int, str, float]]]:
    """The ``top`` classes of each example with their names: ``[[(class_index, class_name, score), ...], ...]``.

    Examples:
        >>> model = applications.EffCapsNet(weights="mnist")
        >>> decode_predictions(model.predict(images), "EffCapsNet/mnist", top=3)[0]
        [(7, '7', 0.98...), (2, '2', 0.05...), (3, '3', 0.03...)]
        >>> mine = presets.load("my-preset")  # a preset folder: presets.save(model, "my-preset")
        >>> decode_predictions(mine.predict(images), mine, top=1)  # or "my-preset"

    Args:
        predictions: ``(batch, classes)`` class scores (capsule lengths, probabilities or logits).
        dataset_or_preset: whose class names: a dataset name (``"fashion_mnist"``), a preset key
            (``"EffCapsNet/mnist"``), a :class:`~keras_capsules.presets.Preset`, the path of a preset
            folder, a model that carries class names (``model.class_names``), or the names themselves.
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
        errors.fail(
            "decode_predictions",
            "predictions",
            "a 2-D array (batch, classes) of class scores",
            f"{scores.dtype} shape {scores.shape}",
        )
    if scores.shape[1] != len(names):
        errors.fail(
            "decode_predictions",
            "predictions",
            f"{len(names)} class scores per example (the classes of {_described(dataset_or_preset)})",
            f"shape {scores.shape}",
        )
    return ranked_classes(scores, top, names, argument="predictions")
