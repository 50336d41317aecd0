"""``train()``: a paper recipe end to end (data, model, distributed fit with resume, evaluation, ``.keras`` and SavedModel)."""

import dataclasses
import hashlib
import inspect
import json
import os
import time
from typing import TYPE_CHECKING
from collections.abc import Sequence

import keras
import numpy as np

from keras_capsules import applications, datasets, recipes
from keras_capsules.datasets.augment import multi_view
from keras_capsules.training import atomic, pruning, validation
from keras_capsules.training.checkpoints import (
    CheckpointError,
    EpochCheckpoint,
    build_optimizer,
    checkpoint_dirs,
    clear_checkpoints,
    restore_checkpoint,
)
from keras_capsules.training.distribute import distributed_evaluate, distributed_fit, get_strategy, is_multi_worker, worker_index
from keras_capsules.training.model_files import export_saved_model, save_model

if TYPE_CHECKING:
    import tensorflow as tf


def construct_model(recipe, classes, input_shape=None, **model_overrides):
    """The uncompiled application named by ``recipe.model`` (see :func:`build_model` for the arguments)."""
    constructor = getattr(applications, recipe.model, None)
    if constructor is None or not callable(constructor) or isinstance(constructor, type):
        raise ValueError(f"train: unknown model {recipe.model!r}; expected an application constructor name such as 'EffCapsNet'.")
    kwargs = {**recipe.model_kwargs, **{k: v for k, v in model_overrides.items() if v is not None}}
    kwargs.setdefault("classes", classes)
    if input_shape is not None:
        kwargs.setdefault("input_shape", tuple(input_shape))
    return constructor(**kwargs)


def build_model(recipe, classes, input_shape=None, steps_per_epoch=None, **model_overrides):
    """Builds and compiles the application named by ``recipe.model`` with the recipe's optimizer, loss and metrics.

    Call it inside ``strategy.scope()`` for distributed training. (Multi-stage recipes compile one
    model per stage: see :func:`stage_model`.)

    Args:
        recipe: a :class:`~keras_capsules.recipes.Recipe`.
        classes: number of classes (unless ``recipe.model_kwargs`` sets it).
        input_shape: image shape (unless ``recipe.model_kwargs`` sets it).
        steps_per_epoch: optimizer steps per epoch, for the learning-rate schedule.
        **model_overrides: constructor arguments replacing the recipe's (``None`` values are ignored).
    """
    model = construct_model(recipe, classes, input_shape, **model_overrides)
    model.compile(optimizer=recipe.make_optimizer(steps_per_epoch), loss=recipe.make_loss(), metrics=recipe.make_metrics())
    return model


def set_stage_trainable(model, stage, frozen):
    """Freezes the layers with weights that ``stage.trainable`` does not name, and unfreezes those frozen by earlier stages.

    Layers are only touched when a stage asks for it, so a single-stage recipe keeps the model's own flags.

    Args:
        model: the model all stages share.
        stage: a :class:`~keras_capsules.recipes.base.Stage`.
        frozen: set of the layer names frozen by earlier stages; updated in place.
    """
    names = {layer.name for layer in model.layers}
    unknown = sorted(set(stage.trainable or ()) - names)
    if unknown:
        raise ValueError(f"train: stage {stage.name!r} field `trainable` expected layer names of model {model.name!r}, received {unknown}.")
    for layer in model.layers:
        train_it = stage.trainable is None or layer.name in stage.trainable
        if train_it and layer.name in frozen:
            layer.trainable = True
            frozen.discard(layer.name)
        elif not train_it and layer.weights and layer.trainable:
            layer.trainable = False
            frozen.add(layer.name)


def stage_model(model, stage, recipe, steps_per_epoch):
    """The compiled model one stage trains: ``model``, or ``model``'s inputs -> the output of layer ``stage.output``.

    Call :func:`set_stage_trainable` first (the optimizer is built for the trainable weights), inside
    ``strategy.scope()`` for distributed training.

    Args:
        model: the model all stages share.
        stage: a :class:`~keras_capsules.recipes.base.Stage`.
        recipe: the stage's single-stage recipe (``Recipe.stage_recipes``).
        steps_per_epoch: optimizer steps per epoch, for the learning-rate schedule.
    """
    net = model
    if stage.output is not None:
        try:
            output = model.get_layer(stage.output).output
        except ValueError:
            raise ValueError(
                f"train: stage {stage.name!r} field `output` expected a layer name of model {model.name!r}, received {stage.output!r}."
            ) from None
        net = keras.Model(model.inputs, output, name=f"{model.name}_{stage.name}")
    optimizer = recipe.make_optimizer(steps_per_epoch)
    if recipe.pruning is not None:
        # Wrapped from the start (not by the callback), so every checkpoint holds the same optimizer structure.
        paths = [variable.path for variable in pruning.shrinkable_weights(net)]
        optimizer = pruning.LobsterOptimizer(optimizer, recipe.pruning.get("strength", 1e-4), variable_paths=paths)
    net.compile(optimizer=optimizer, loss=recipe.make_loss(), metrics=recipe.make_metrics())
    build_optimizer(net)  # before the first traced step, which would otherwise build it and be traced twice
    return net


def _multi_view_data(recipe, stage, plain_data, steps, seed, drop_remainder):
    """``stage.views`` augmented views per image of ``plain_data`` (batches loaded without augmentation), ``steps`` batches."""
    import tensorflow as tf

    if recipe.augmentation is None:
        raise ValueError(f"train: stage {stage.name!r} makes {stage.views} views per image and expected an augmentation preset, received None.")
    views = multi_view(plain_data.unbatch(), recipe.augmentation, stage.views, recipe.batch_size, seed, drop_remainder)
    return views.apply(tf.data.experimental.assert_cardinality(steps)).prefetch(tf.data.AUTOTUNE)


@dataclasses.dataclass(frozen=True)
class SplitData:
    """A run's training split, less its validation hold-out.

    Attributes:
        training: ``augment -> tf.data.Dataset``: the examples trained on, shuffled, with ``augment``'s training transform.
        validation: the hold-out as the evaluation splits are served (the augmentation's evaluation transform), or ``None``.
        record: what ``metrics.json`` says about the hold-out (:func:`~keras_capsules.training.validation.record`).
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
    if datasets.info(dataset).pipeline is not None:  # derived sets are drawn on the fly: there are no fixed examples to hold out
        if requested or recipe.pruning is not None:
            raise ValueError(
                f"train: argument `validation_examples` expected 0 or None for {dataset!r}, a set generated on the fly "
                f"(pruning recipes need a hold-out), received {requested!r}."
            )

        def generated(augment):
            return datasets.load(
                dataset, recipe.train_split, batch_size=recipe.batch_size, seed=seed, limit=limit, drop_remainder=multi_worker, augment=augment, **loader_options
            )

        return SplitData(generated, None, validation.record(0, reason=f"{dataset} is generated on the fly"))

    images, labels = datasets.load_arrays(dataset, recipe.train_split, **loader_options)
    used = len(images) if limit is None else min(limit, len(images))
    if requested is None:
        requested = -(-validation.default_size(used) // replicas) * replicas
    examples = validation.resolve_size(requested, len(images))
    if examples == 0 and recipe.pruning is not None:
        raise ValueError("train: argument `validation_examples` expected a positive hold-out for a pruning recipe (its threshold search reads it), received 0.")
    train_indices, validation_indices = validation.split_indices(len(images), examples)
    train_indices = train_indices[:limit]

    def training(augment):
        return datasets.from_arrays(
            images[train_indices], labels[train_indices], batch_size=recipe.batch_size, augment=augment,
            training=True, seed=seed, shuffle=True, drop_remainder=multi_worker,
        )

    held_out = None
    if examples:
        # Cached: it is evaluated after every epoch (and many times by a pruning search).
        held_out = datasets.from_arrays(
            images[validation_indices], labels[validation_indices], batch_size=max(recipe.batch_size, 64), augment=recipe.augmentation
        ).cache()
    return SplitData(training, held_out, {**validation.record(examples), "training_examples": len(train_indices)})


def _check_stage(state, stage, folder):
    if state.get("stage") not in (None, stage.name):
        raise CheckpointError(
            f"restore_checkpoint: {folder} was written in stage {state['stage']!r}, but with this recipe's stage epochs it falls "
            f"in stage {stage.name!r}. Resume with the same epochs, use another output folder, or start over with resume=False (--no-resume)."
        )


def check_model_arguments(model, kwargs):
    """Raises a ``ValueError`` naming the arguments in ``kwargs`` that application ``model``'s constructor does not take."""
    constructor = getattr(applications, model, None)
    if not callable(constructor) or isinstance(constructor, type):
        return  # construct_model reports the unknown model
    parameters = inspect.signature(constructor).parameters
    unknown = sorted(set(kwargs) - set(parameters))
    if unknown and not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        raise ValueError(
            f"train: {model} has no constructor argument {', '.join(map(repr, unknown))} (from model_kwargs, the CLI's "
            f"--model-arg, or a keyword that is not a recipe field); its arguments: {', '.join(parameters)}."
        )


def finished_run(output, recipe, arguments, export):
    """The stored metrics of a finished run in ``output`` of ``recipe`` with ``arguments``, marked ``already_complete``; else ``None``.

    ``metrics.json`` is written last, once every planned epoch is trained, evaluated and saved, so its
    presence with the same recipe and arguments, next to ``model.keras`` (and the SavedModel when
    ``export``), means there is nothing left to do.
    """
    try:
        with open(os.path.join(output, "metrics.json")) as handle:
            stored = json.load(handle)
    except (OSError, ValueError):
        return None
    recipe_json = json.loads(json.dumps(dataclasses.asdict(recipe), default=repr))  # tuples as lists, as metrics.json stores them
    same = isinstance(stored, dict) and stored.get("arguments") == arguments and stored.get("recipe") == recipe_json
    files = ["model.keras", *([os.path.join("export", "saved_model.pb")] if export else [])]
    if same and all(os.path.isfile(os.path.join(output, name)) for name in files):
        return {**stored, "already_complete": True}
    return None


def weights_fingerprint(model):
    """sha256 of all weights (equal fingerprints: bit-identical weights, e.g. across workers)."""
    digest = hashlib.sha256()
    for value in model.get_weights():
        digest.update(np.ascontiguousarray(value).tobytes())
    return digest.hexdigest()


def train(
    model: str = "EffCapsNet",
    dataset: str = "mnist_sample",
    epochs: int | None = None,
    batch_size: int | None = None,
    learning_rate: float | None = None,
    output: str | os.PathLike | None = None,
    data_dir: str | os.PathLike | None = None,
    limit: int | None = None,
    seed: int = 0,
    verbose: int = 1,
    export: bool = True,
    *,
    variant: str = "default",
    download: bool = False,
    strategy: "str | tf.distribute.Strategy" = "default",
    resume: bool = True,
    eval_limit: int | None = None,
    callbacks: Sequence[keras.callbacks.Callback] | None = None,
    model_kwargs: dict | None = None,
    validation_examples: int | None = None,
    **overrides,
) -> dict:
    """Trains ``model`` on ``dataset`` with its paper recipe (every value overridable), evaluates, saves and exports it.

    Validation protocol: the run trains on its training split minus a fixed validation hold-out
    (``validation_examples`` images drawn with a fixed seed, independent of ``seed``; see
    :mod:`keras_capsules.training.validation`) and reports validation loss and metrics after every
    epoch (``val_*`` in the progress output and in ``metrics.json``'s ``history``). The test splits
    are evaluated once, at the end. Decisions about a run (continue, stop, change the schedule, pick
    a seed) should read validation only.

    Model selection: the model after the last epoch is the one saved, evaluated and exported; no
    epoch is chosen by its test (or validation) accuracy, where several reference codes keep their
    best test epoch.

    Fault tolerance: after every epoch a checkpoint (weights and optimizer state) is written
    atomically to ``output/checkpoints``; rerunning the same call after a crash or ``SIGKILL``
    resumes after the last completed epoch with the same optimizer state and finishes the planned
    epochs (``resume=False`` starts over). A multi-stage recipe (``Recipe.stages``, e.g. GLOM's
    contrastive pre-training then its head) trains its stages in order on the one model, numbering
    checkpoints across stages, so a run killed in stage 2 resumes in stage 2. Under
    ``strategy="multi_worker"`` every worker runs the same call (see ``docs/distributed.md``); only
    the chief writes checkpoints, ``model.keras`` and the export.

    Args:
        model: application constructor name (``"EffCapsNet"``, ``"CapsNet"``, ...).
        dataset: dataset name (``"mnist_sample"`` ships with the package).
        epochs, batch_size, learning_rate: override the recipe.
        output: folder for ``metrics.json``, ``model.keras``, ``export/`` and ``checkpoints/``
            (default ``runs/<model>-<dataset>``).
        data_dir: folder with the dataset's standard files.
        limit: use only the first ``limit`` training examples. eval_limit: the same for evaluation.
        seed: random seed for weights, shuffling and augmentation.
        verbose: Keras progress-bar verbosity.
        export: also write a SavedModel to ``output/export``.
        variant: recipe variant (``recipes.available(model)`` lists them).
        download: allow TFDS downloads.
        strategy: ``"default"``, ``"mirrored"``, ``"multi_worker"`` or a ``tf.distribute.Strategy``.
        resume: continue from the checkpoints in ``output`` (default) or delete them and start over.
        callbacks: extra Keras callbacks.
        model_kwargs: constructor arguments replacing the recipe's.
        validation_examples: size of the validation hold-out (default: the recipe's, else
            ``min(5,000, N // 10)`` of the ``N`` training examples used; a pruning recipe's search
            set otherwise); ``0`` turns validation off (``metrics.json`` records it). Derived sets
            generated on the fly (``expanded_mnist``, ...) hold nothing out.
        **overrides: recipe fields (``optimizer=``, ``lr_decay=``, ``augmentation=``, ...) or
            constructor arguments (``router=``, ``routing_iterations=``, ...).

    Returns:
        The metrics dictionary written to ``metrics.json`` (``metrics-worker-<i>.json`` on non-chief workers).
        When ``output`` already holds the finished run of the same recipe, ``limit``, ``eval_limit`` and
        ``seed`` (and ``resume`` is true), nothing is trained: its stored metrics are returned with
        ``"already_complete": True``.
    """
    recipe_fields = {field.name for field in dataclasses.fields(recipes.Recipe)}
    recipe_overrides = {k: v for k, v in overrides.items() if k in recipe_fields}
    model_overrides = {**{k: v for k, v in overrides.items() if k not in recipe_fields}, **(model_kwargs or {})}
    recipe = recipes.get(model, dataset, variant).replace(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate)
    recipe = dataclasses.replace(recipe, **recipe_overrides)  # explicit values, None included (e.g. augmentation=None)
    recipe = dataclasses.replace(recipe, model_kwargs={**recipe.model_kwargs, **model_overrides})  # metrics.json records the run
    if validation_examples is not None:
        recipe = dataclasses.replace(recipe, validation_examples=validation_examples)
    check_model_arguments(recipe.model, recipe.model_kwargs)
    strategy_name = strategy if isinstance(strategy, str) else type(strategy).__name__
    strategy = get_strategy(strategy)
    multi_worker = is_multi_worker(strategy)
    task_id, chief = worker_index(strategy)
    output = output or os.path.join("runs", f"{model}-{dataset}")
    arguments = {"limit": limit, "eval_limit": eval_limit, "seed": seed}
    finished = finished_run(output, recipe, arguments, export) if resume and not multi_worker else None
    if finished is not None:
        return finished
    backup_dir = os.path.join(output, "checkpoints")
    os.makedirs(output, exist_ok=True)
    keras.utils.set_random_seed(seed)

    split_data = split_training_data(recipe, dataset, data_dir, download, seed, limit, multi_worker, strategy.num_replicas_in_sync)
    train_data = split_data.training(recipe.augmentation)
    # The evaluation data is resolved before training, so missing files fail in seconds, not after the run.
    eval_data = {}
    for eval_dataset, split in recipe.evaluations():
        key = split if eval_dataset == dataset else f"{eval_dataset}:{split}"
        eval_data[key] = datasets.load(
            eval_dataset,
            split,
            batch_size=max(recipe.batch_size, 64),
            data_dir=data_dir,
            download=download,
            shuffle=False,
            seed=seed,
            limit=eval_limit,
            augment=recipe.augmentation,
            training=False,
            **(recipe.dataset_options if eval_dataset == dataset else {}),
        )
    steps = recipe.steps_per_epoch or int(train_data.cardinality())
    plan = recipe.stage_recipes()
    offsets = np.cumsum([0] + [stage_recipe.epochs for _, stage_recipe in plan]).tolist()
    stage_data = {}

    def data_for(stage):
        if stage.views not in stage_data:
            if stage.views == 1:
                stage_data[1] = train_data
            else:
                plain = split_data.training(None)
                stage_data[stage.views] = _multi_view_data(recipe, stage, plain, steps, seed, multi_worker)
        data = stage_data[stage.views]
        return data.repeat() if recipe.steps_per_epoch else data

    with strategy.scope():
        net = construct_model(recipe, datasets.num_classes(dataset), train_data.element_spec[0].shape[1:])
        if not resume and chief:
            clear_checkpoints(backup_dir)
    found = checkpoint_dirs(backup_dir) if resume else []
    done = found[-1][0] if found else 0  # epochs of all stages completed at the newest checkpoint
    # The stage that wrote it: offsets[i] < done <= offsets[i + 1] (the last stage when done is beyond the plan).
    resume_stage = next((i for i in range(len(plan)) if done <= offsets[i + 1]), len(plan) - 1) if done else 0
    frozen: set[str] = set()
    history = None
    checkpoints: list[EpochCheckpoint] = []
    iterations_at_start = 0
    start = time.time()
    for index, (stage, stage_recipe) in enumerate(plan):
        set_stage_trainable(net, stage, frozen)
        if index < resume_stage:
            continue
        with strategy.scope():
            trained = stage_model(net, stage, stage_recipe, steps)
            if index == resume_stage and done:
                state = restore_checkpoint(backup_dir, trained)
                _check_stage(state, stage, found[-1][1])
                history = state["history"]
        initial_epoch = min(max(done - offsets[index], 0), stage_recipe.epochs)
        last = index == len(plan) - 1
        if initial_epoch == stage_recipe.epochs and not last:
            continue  # the checkpoint closed this stage: the next one starts fresh
        if not checkpoints:
            iterations_at_start = int(trained.optimizer.iterations.numpy())
        checkpoint = EpochCheckpoint(
            backup_dir, history=history, write=chief, epoch_offset=offsets[index], prefix="" if last else f"{stage.name}_", stage=stage.name
        )
        checkpoints.append(checkpoint)
        stage_callbacks = [checkpoint, *stage_recipe.make_callbacks(trained.loss), *(callbacks or [])]
        if recipe.pruning is not None:
            options = {k: v for k, v in recipe.pruning.items() if k != "validation_examples"}
            stage_callbacks.insert(0, pruning.LobsterPruning(split_data.validation, batch_size=recipe.batch_size, verbose=verbose, **options))
        # Validation scores the model's own output; a stage training an inner layer (GLOM's contrastive stage) has no accuracy to report.
        stage_validation = split_data.validation if stage.output is None else None
        distributed_fit(
            trained, data_for(stage), stage_recipe.epochs, strategy, recipe.steps_per_epoch, initial_epoch, stage_callbacks, verbose, stage_validation
        )
        history = checkpoint.history
    train_seconds = time.time() - start
    # `net` is compiled by the last stage, which trains the model itself (Recipe checks it); it is saved
    # with the constructor's trainable flags.
    set_stage_trainable(net, recipes.Stage("trained"), frozen)

    evaluations = {key: distributed_evaluate(net, data, strategy, verbose=verbose) for key, data in eval_data.items()}
    first = next(iter(evaluations.values()))
    metrics = {
        "model": model,
        "dataset": dataset,
        "variant": variant,
        "test_accuracy": first.get("accuracy"),
        "test_loss": first.get("loss"),
        "evaluations": evaluations,
        "epochs_completed": max([done, *(c.epochs_completed for c in checkpoints if c.epochs_completed)]),
        "resumed_from_epoch": done,
        "stages": [{"name": stage.name, "epochs": stage_recipe.epochs} for stage, stage_recipe in plan] if recipe.stages else None,
        "resumed_in_stage": plan[resume_stage][0].name if recipe.stages and done else None,
        "steps_per_epoch": steps,
        "optimizer_iterations_at_start": iterations_at_start,
        "optimizer_iterations": int(net.optimizer.iterations.numpy()),
        "train_seconds": round(train_seconds, 2),
        "history": history or {},
        "validation": split_data.record,
        "validation_accuracy": (history or {}).get("val_accuracy", [None])[-1],
        "recipe": dataclasses.asdict(recipe),
        "arguments": arguments,
        "parameters": int(net.count_params()),
        "strategy": strategy_name,
        "replicas": int(strategy.num_replicas_in_sync),
        "weights_sha256": weights_fingerprint(net),
        "sparsity": pruning.sparsity(net)["sparsity"] if recipe.pruning is not None else None,
    }
    if chief:
        save_model(net, os.path.join(output, "model.keras"))
        if export:
            export_saved_model(net, os.path.join(output, "export"), overwrite=True)  # the run's own export
    atomic.write_json(os.path.join(output, "metrics.json" if chief else f"metrics-worker-{task_id}.json"), metrics)
    return metrics
