"""``tune()``: a keras-tuner random search over a capsule application on a dataset (TensorFlow backend)."""

import json
import os

import numpy as np

from keras_capsules import datasets
from keras_capsules.datasets import holdout
from keras_capsules.training.run_dataset import default_output
from keras_capsules.tuning.hypermodels import CapsuleHyperModel, _import_keras_tuner


def _split(dataset, data_dir, limit, validation_fraction):
    """``((x, y), (x_validation, y_validation))`` from the training split: its last ``validation_fraction``
    validates; a folder of images (its classes one after another) holds out each class's share instead."""
    images, labels = datasets.load_arrays(dataset, "train", data_dir=data_dir)
    images, labels = datasets.first_examples(dataset, images, labels, limit)
    held_out = max(1, int(len(images) * validation_fraction))
    if datasets.info(dataset).stratified_holdout:
        kept, validating = holdout.stratified_split_indices(labels, held_out)
    else:
        kept, validating = np.arange(len(images) - held_out), np.arange(len(images) - held_out, len(images))
    scale = lambda x: x.astype("float32") / 255.0  # noqa: E731
    return (scale(images[kept]), labels[kept]), (scale(images[validating]), labels[validating])


def _project(model, dataset):
    """keras-tuner's project folder name: ``<model>-<dataset>``, for a folder of images
    ``<model>-<folder name>-<8 hex digits of its path's SHA-256>`` (as ``train``'s run folder)."""
    return os.path.basename(default_output(model, dataset))


def tune(
    model="EffCapsNet",
    dataset="mnist_sample",
    max_trials=5,
    epochs=1,
    batch_size=None,
    limit=None,
    data_dir=None,
    routers=None,
    directory=None,
    overwrite=False,
    validation_fraction=0.1,
    seed=0,
    verbose=1,
    **application_kwargs,
):
    """Random search over :class:`CapsuleHyperModel`; the objective is validation accuracy.

    The validation set is the last ``validation_fraction`` of the (limited) training split (a folder of images,
    ``dataset`` as ``datasets.register_folder`` names it: each class's share, and ``limit`` drawn class by class),
    so the test split stays untouched. Results go to ``directory`` (default ``runs/tune/<model>-<dataset>``; a folder:
    ``runs/tune/<model>-<folder name>-<hash>``),
    with ``best_hyperparameters.json`` beside keras-tuner's trial folders. A previous search in the
    same folder is continued (its finished trials count towards ``max_trials``) unless
    ``overwrite=True`` discards it.

    Returns:
        ``(tuner, best_hyperparameters)``; rebuild the best model with
        ``tuner.hypermodel.build(best_hyperparameters)``.
    """
    kt = _import_keras_tuner()
    (x, y), (xv, yv) = _split(dataset, data_dir, limit, validation_fraction)
    hypermodel = CapsuleHyperModel(
        model,
        classes=datasets.num_classes(dataset),
        input_shape=x.shape[1:],
        dataset=dataset,
        routers=routers,
        application_kwargs=application_kwargs,
    )
    directory = directory or os.path.join("runs", "tune")
    tuner = kt.RandomSearch(
        hypermodel,
        objective="val_accuracy",
        max_trials=max_trials,
        directory=directory,
        project_name=_project(model, dataset),
        seed=seed,
        overwrite=overwrite,
    )
    tuner.search(
        x,
        y,
        validation_data=(xv, yv),
        epochs=epochs,
        batch_size=batch_size or hypermodel.recipe.batch_size,
        verbose=verbose,
    )
    best = tuner.get_best_hyperparameters(1)[0]
    with open(os.path.join(directory, _project(model, dataset), "best_hyperparameters.json"), "w") as handle:
        json.dump(best.values, handle, indent=2)
    return tuner, best
