"""A run's data, all resolved before training: the training split less its validation hold-out, the evaluation
splits, and the dataset each stage trains on (one view per image, or several)."""

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from keras_capsules import datasets
from keras_capsules.datasets import holdout as validation
from keras_capsules.datasets.augment import multi_view

if TYPE_CHECKING:
    import tensorflow as tf


def _multi_view_data(recipe, stage, plain_data, steps, seed, drop_remainder):
    """``stage.views`` augmented views per image of ``plain_data`` (batches loaded without augmentation), ``steps`` batches."""
    import tensorflow as tf

    if recipe.augmentation is None:
        raise ValueError(
            f"train: stage {stage.name!r} makes {stage.views} views per image and expected an augmentation preset, received None."
        )
    views = multi_view(plain_data.unbatch(), recipe.augmentation, stage.views, recipe.batch_size, seed, drop_remainder)
    return views.apply(tf.data.experimental.assert_cardinality(steps)).prefetch(tf.data.AUTOTUNE)


@dataclasses.dataclass(frozen=True)
class SplitData:
    """A run's training split, less its validation hold-out.

    Attributes:
        training: ``augment -> tf.data.Dataset``: the examples trained on, shuffled, with ``augment``'s training transform.
        validation: the hold-out as the evaluation splits are served (the augmentation's evaluation transform), or ``None``.
        record: what ``metrics.json`` says about the hold-out (:func:`~keras_capsules.datasets.holdout.record`).
    """

    training: object
    validation: object
    record: dict


def split_training_data(recipe, dataset, data_dir, download, seed, limit, multi_worker, replicas=1):
    """The training examples and the validation hold-out of ``recipe``'s training split (see :class:`SplitData`).

    The default hold-out size is rounded up to a multiple of ``replicas``: Keras cannot evaluate a
    last batch smaller than the replica count (some replicas would receive no example).
    """
    loader_options = dict(data_dir=data_dir, download=download, **recipe.dataset_options)
    requested = recipe.validation_examples
    if requested is None and recipe.pruning is not None:
        requested = int(recipe.pruning.get("validation_examples", 5500))  # REM's threshold-search set
    if (
        datasets.info(dataset).pipeline is not None
    ):  # derived sets are drawn on the fly: there are no fixed examples to hold out
        if requested or recipe.pruning is not None:
            raise ValueError(
                f"train: argument `validation_examples` expected 0 or None for {dataset!r}, a set generated on the fly "
                f"(pruning recipes need a hold-out), received {requested!r}."
            )

        def generated(augment):
            return datasets.load(
                dataset,
                recipe.train_split,
                batch_size=recipe.batch_size,
                seed=seed,
                limit=limit,
                drop_remainder=multi_worker,
                augment=augment,
                **loader_options,
            )

        return SplitData(generated, None, validation.record(0, reason=f"{dataset} is generated on the fly"))

    images, labels = datasets.load_arrays(dataset, recipe.train_split, **loader_options)
    used = len(images) if limit is None else min(limit, len(images))
    if requested is None:
        requested = -(-validation.default_size(used) // replicas) * replicas
    examples = validation.resolve_size(requested, len(images))
    if examples == 0 and recipe.pruning is not None:
        raise ValueError(
            "train: argument `validation_examples` expected a positive hold-out for a pruning recipe (its threshold search reads it), received 0."
        )
    if datasets.info(dataset).stratified_holdout:  # a folder of images: each class holds out its share
        train_indices, validation_indices = validation.stratified_split_indices(labels, examples)
        held_out_record = validation.stratified_record(labels, validation_indices, datasets.class_names(dataset))
        if examples:
            _say_unvalidated_classes(labels, validation_indices, datasets.class_names(dataset), examples)
    else:
        train_indices, validation_indices = validation.split_indices(len(images), examples)
        held_out_record = validation.record(examples)
    left = len(train_indices)
    train_indices = datasets.first_examples(dataset, train_indices, labels[train_indices], limit)[0]
    if datasets.info(dataset).stratified_holdout and len(train_indices) < left:
        _say_limited_classes(labels[train_indices], datasets.class_names(dataset), left, limit)

    def training(augment):
        return datasets.from_arrays(
            images[train_indices],
            labels[train_indices],
            batch_size=recipe.batch_size,
            augment=augment,
            training=True,
            seed=seed,
            shuffle=True,
            drop_remainder=multi_worker,
        )

    held_out = None
    if examples:
        # Cached: it is evaluated after every epoch (and many times by a pruning search).
        held_out = datasets.from_arrays(
            images[validation_indices],
            labels[validation_indices],
            batch_size=max(recipe.batch_size, 64),
            augment=recipe.augmentation,
        ).cache()
    return SplitData(training, held_out, {**held_out_record, "training_examples": len(train_indices)})


def _say_unvalidated_classes(labels, validation_indices, names, examples):
    """Prints a warning naming the classes the stratified hold-out of ``examples`` images holds none of."""
    held = np.bincount(labels[validation_indices], minlength=len(names))
    found = np.bincount(labels, minlength=len(names))
    missing = [f"{names[c]!r} ({found[c]} image{'' if found[c] == 1 else 's'})" for c in np.flatnonzero(held == 0)]
    if missing:
        print(
            f"warning: the validation hold-out ({examples} images) has no image of the class(es) {', '.join(missing)}: too "
            "few for a share of it (a class keeps at least one image for training), so val_accuracy does not score them.",
            flush=True,
        )


def _say_limited_classes(labels, names, left, limit):
    """Prints how a ``limit`` on a folder of images drew its training images, class by class."""
    counts = np.bincount(labels, minlength=len(names))
    print(
        f"limit {limit}: training on {len(labels)} of the {left} images left after the hold-out, drawn class by class: "
        + ", ".join(f"{name!r} {count}" for name, count in zip(names, counts)),
        flush=True,
    )


@dataclasses.dataclass(frozen=True)
class RunData:
    """A run's data, all resolved before training (missing files fail in seconds, not after the run).

    Attributes:
        split: the training split less its hold-out (:class:`SplitData`).
        training: ``split``'s examples with the recipe's training augmentation, batched.
        evaluations: ``{key: tf.data.Dataset}`` of the evaluation splits, ``key`` the split, or
            ``"dataset:split"`` for another dataset.
        steps: optimizer steps per epoch.
        by_views: the stage datasets built so far, by views per image (:func:`stage_data`).
    """

    split: SplitData
    training: "tf.data.Dataset"
    evaluations: dict
    steps: int
    by_views: dict = dataclasses.field(default_factory=dict)


def load_data(run, dataset, data_dir, download):
    """The :class:`RunData` of ``run``'s recipe on ``dataset`` (``data_dir``, ``download`` as in :func:`~keras_capsules.datasets.load`)."""
    recipe, limit = run.recipe, run.arguments["limit"]
    split = split_training_data(
        recipe, dataset, data_dir, download, run.seed, limit, run.multi_worker, run.strategy.num_replicas_in_sync
    )
    training = split.training(recipe.augmentation)
    evaluations = {}
    for eval_dataset, eval_split in recipe.evaluations():
        eval_dataset = datasets.evaluation_dataset(
            eval_dataset, eval_split, data_dir
        )  # "affnist|affine_mnist": the real files when present
        key = eval_split if eval_dataset == dataset else f"{eval_dataset}:{eval_split}"
        evaluations[key] = datasets.load(
            eval_dataset,
            eval_split,
            batch_size=max(recipe.batch_size, 64),
            data_dir=data_dir,
            download=download,
            shuffle=False,
            seed=run.seed,
            limit=run.arguments["eval_limit"],
            augment=recipe.augmentation,
            training=False,
            **(recipe.dataset_options if eval_dataset == dataset else {}),
        )
    return RunData(split, training, evaluations, recipe.steps_per_epoch or int(training.cardinality()))


def stage_data(run, data, stage):
    """The dataset ``stage`` trains on: ``data.training``, or ``stage.views`` views per image; repeated when the recipe fixes the steps per epoch.

    Built once per number of views (kept in ``data.by_views``).
    """
    if stage.views not in data.by_views:
        if stage.views == 1:
            data.by_views[1] = data.training
        else:
            data.by_views[stage.views] = _multi_view_data(
                run.recipe, stage, data.split.training(None), data.steps, run.seed, run.multi_worker
            )
    stage_data = data.by_views[stage.views]
    return stage_data.repeat() if run.recipe.steps_per_epoch else stage_data
