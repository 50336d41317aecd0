"""Evaluating a trained model (or a ``.keras`` file) on a dataset split: ``keras-capsules evaluate``."""

import json
import os

import numpy as np

from keras_capsules import datasets
from keras_capsules.saving import load_model


def training_record(model_path):
    """The ``metrics.json`` written next to ``model_path`` by ``train`` as a dict; for a preset folder, the run record
    it keeps (``presets.save(..., metrics=...)``, what ``train --save-preset`` writes); ``{}`` when there is none (or
    it is unreadable)."""
    from keras_capsules.presets import PresetFileError, folders

    if folders.is_preset_folder(model_path):
        try:
            record = folders.read(model_path).metadata.get("metrics")
        except PresetFileError:
            return {}
        return record if isinstance(record, dict) else {}
    metrics = os.path.join(os.path.dirname(os.path.abspath(model_path)), "metrics.json")
    try:
        with open(metrics) as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def training_preset(model_path):
    """The augmentation preset recorded in the ``metrics.json`` written next to ``model_path`` by ``train``, or ``None``."""
    recipe = training_record(model_path).get("recipe")
    return recipe.get("augmentation") if isinstance(recipe, dict) else None


def _prediction_scores(model, data):
    """Accuracy from predictions for models compiled without a loss (top-k set match for multi-hot labels)."""
    hits = total = 0
    for x, y in data:
        scores = np.asarray(model.predict_on_batch(x))
        y = np.asarray(y)
        if y.ndim == 2:
            k = y.sum(axis=1).astype(int)
            order = np.argsort(-scores, axis=1)
            hits += sum(set(order[i, : k[i]]) == set(np.flatnonzero(y[i])) for i in range(len(y)))
        else:
            hits += int(np.sum(np.argmax(scores, axis=-1) == y.reshape(-1)))
        total += len(y)
    return {"accuracy": hits / max(total, 1)}


def evaluate(
    model, dataset, split="test", batch_size=64, data_dir=None, download=False, limit=None, augment=None, **options
):
    """Evaluates ``model`` (a Keras model or a ``.keras`` path) on ``split`` of ``dataset``.

    Compiled models report their compiled loss and metrics; models saved without compiling report
    accuracy (for multi-hot labels: the top-k classes equal the k true classes).

    Args:
        model: a model or a ``.keras`` file.
        dataset, split, batch_size, data_dir, download, limit, augment, **options: as in
            :func:`keras_capsules.datasets.load` (the preset's evaluation transform is applied).

    Returns:
        A dict of metric values.

    Raises:
        ValueError: the dataset's images do not have the model's input shape.
    """
    if isinstance(model, (str, os.PathLike)):
        model = load_model(model)
    data = datasets.load(
        dataset,
        split,
        batch_size=batch_size,
        data_dir=data_dir,
        download=download,
        shuffle=False,
        limit=limit,
        augment=augment,
        training=False,
        **options,
    )
    expected = tuple(model.inputs[0].shape[1:]) if getattr(model, "inputs", None) else None
    received = tuple(data.element_spec[0].shape[1:])
    if expected is not None and expected != received:
        presets = ", ".join(datasets.available_augmentations())
        raise ValueError(
            f"evaluate: model {model.name!r} expects images of shape {expected}, but dataset {dataset!r} with augment={augment!r} "
            f"gives {received}; pass the preset used in training (one of: {presets})."
        )
    if getattr(model, "compiled", False) and model.loss is not None:
        return {k: float(v) for k, v in model.evaluate(data, return_dict=True, verbose=0).items()}
    return _prediction_scores(model, data)
