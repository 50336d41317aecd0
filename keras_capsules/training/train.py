"""``train()``: a paper recipe end to end (data, model, distributed fit with resume, evaluation, ``.keras`` and SavedModel)."""

import dataclasses
import hashlib
import inspect
import json
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import keras
import numpy as np

from keras_capsules import applications, datasets, errors, recipes
from keras_capsules.applications import fine_tune
from keras_capsules.datasets import holdout as validation
from keras_capsules.datasets.augment import multi_view
from keras_capsules.export import export_saved_model
from keras_capsules.saving import atomic, save_model
from keras_capsules.saving.output_paths import check_writable_folder, make_folder
from keras_capsules.training import memory_plan, pruning, run_dataset, stages
from keras_capsules.training.checkpoints import (
    CheckpointError,
    EpochCheckpoint,
    checkpoint_dirs,
    clear_checkpoints,
    restore_checkpoint,
)
from keras_capsules.training.distribute import (
    distributed_evaluate,
    distributed_fit,
    get_strategy,
    is_multi_worker,
    worker_index,
)
from keras_capsules.training.run_dataset import default_output
from keras_capsules.training.stages import (  # noqa: F401 (build_model, construct_model: also imported from here)
    build_model,
    construct_model,
    set_stage_trainable,
    stage_model,
)

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
    train_indices = train_indices[:limit]

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
    recipe_json = json.loads(
        json.dumps(dataclasses.asdict(recipe), default=repr)
    )  # tuples as lists, as metrics.json stores them
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


def _paper_or_generic_recipe(model, dataset, variant):
    """``recipes.get(model, dataset, variant)``; for a dataset no paper used (a folder of images) without a recipe of its own, the application's generic recipe."""
    info = datasets.info(dataset)
    if (
        info.stratified_holdout
        and (model, dataset, variant) not in recipes.available(model)
        and variant in ("default", "generic")
    ):
        from keras_capsules.recipes.generic import generic

        return generic(model, dataset, has_test="test" in info.splits)
    return recipes.get(model, dataset, variant)


def _fine_tuning_stages(recipe, weights, freeze_backbone_epochs):
    """``recipe`` with a first stage that trains only the new layers for ``freeze_backbone_epochs`` of its epochs (none: unchanged)."""
    if not freeze_backbone_epochs:
        return recipe
    if weights is None:
        raise ValueError(
            f"train: argument `freeze_backbone_epochs` expected 0 without `weights` (there is no pretrained backbone to freeze), received {freeze_backbone_epochs!r}."
        )
    if recipe.stages or not errors.is_integer(freeze_backbone_epochs) or not 0 < freeze_backbone_epochs < recipe.epochs:
        raise ValueError(
            f"train: argument `freeze_backbone_epochs` expected an integer in 1..{recipe.epochs - 1} (fewer than the {recipe.epochs} "
            f"epochs, on a single-stage recipe), received {freeze_backbone_epochs!r}"
            + (" with a multi-stage recipe" if recipe.stages else "")
            + "."
        )
    new_layers = tuple(fine_tune.new_layer_names(recipe.model, weights, **recipe.model_kwargs))
    stages = (
        recipes.Stage("frozen_backbone", epochs=int(freeze_backbone_epochs), trainable=new_layers),
        recipes.Stage("fine_tune", epochs=recipe.epochs - int(freeze_backbone_epochs)),
    )
    return dataclasses.replace(recipe, stages=stages)


def _resolve_recipe(
    model, dataset, variant, replacements, overrides, model_kwargs, validation_examples, stage_epochs=None
):
    """Recipe resolution: ``recipes.get(model, dataset, variant)`` with the run's overrides, its model arguments checked.

    Args:
        replacements: ``{"epochs", "batch_size", "learning_rate"}`` (``None`` keeps the recipe's value).
        overrides: :func:`train`'s ``**overrides``: recipe fields replace the recipe's (``None`` included),
            the others are constructor arguments.
        model_kwargs: constructor arguments, over the overrides.
        validation_examples: the hold-out size (``None`` keeps the recipe's).
        stage_epochs: ``{stage name: epochs}`` of a multi-stage recipe, over ``replacements["epochs"]``.

    Returns:
        The :class:`~keras_capsules.recipes.Recipe` the run trains and ``metrics.json`` records.
    """
    recipe_fields = {field.name for field in dataclasses.fields(recipes.Recipe)}
    recipe_overrides = {k: v for k, v in overrides.items() if k in recipe_fields}
    model_overrides = {**{k: v for k, v in overrides.items() if k not in recipe_fields}, **(model_kwargs or {})}
    recipe = _paper_or_generic_recipe(model, dataset, variant).replace(**replacements)
    recipe = dataclasses.replace(recipe, **recipe_overrides)  # explicit values, None included (e.g. augmentation=None)
    recipe = dataclasses.replace(
        recipe, model_kwargs={**recipe.model_kwargs, **model_overrides}
    )  # metrics.json records the run
    if validation_examples is not None:
        recipe = dataclasses.replace(recipe, validation_examples=validation_examples)
    recipe = recipe.with_stage_epochs(stage_epochs)
    check_model_arguments(recipe.model, recipe.model_kwargs)
    return recipe


@dataclasses.dataclass(frozen=True)
class _Run:
    """What every step of one :func:`train` call shares.

    Attributes:
        recipe: the resolved recipe.
        strategy: the ``tf.distribute.Strategy``; ``strategy_name`` as ``metrics.json`` records it.
        multi_worker: whether ``strategy`` spans several workers.
        chief: whether this worker writes checkpoints, ``model.keras`` and the export; ``task_id`` its index.
        output: the run folder (checkpoints in ``output/checkpoints``).
        arguments: ``{"limit", "eval_limit", "seed"}``, as ``metrics.json`` records them.
        verbose, callbacks, memory_check, max_memory: :func:`train`'s arguments.
    """

    recipe: recipes.Recipe
    strategy: "tf.distribute.Strategy"
    strategy_name: str
    multi_worker: bool
    chief: bool
    task_id: int
    output: str | os.PathLike
    arguments: dict
    verbose: int
    callbacks: Sequence[keras.callbacks.Callback] | None
    memory_check: str = "check"
    max_memory: int | None = None

    @property
    def seed(self):
        return self.arguments["seed"]

    @property
    def backup_dir(self):
        return os.path.join(self.output, "checkpoints")


def _start_run(recipe, strategy, output, arguments, verbose, callbacks, memory_check="check", max_memory=None):
    """The :class:`_Run` of ``recipe`` under ``strategy`` (a name or a ``tf.distribute.Strategy``), writing into ``output``."""
    errors.check_one_of("train", "memory_check", memory_check, ("check", "only", "off"))
    strategy_name = strategy if isinstance(strategy, str) else type(strategy).__name__
    strategy = get_strategy(strategy)
    multi_worker = is_multi_worker(strategy)
    task_id, chief = worker_index(strategy)
    if isinstance(max_memory, str):
        max_memory = memory_plan.parse_size(max_memory)
    return _Run(
        recipe,
        strategy,
        strategy_name,
        multi_worker,
        chief,
        task_id,
        output,
        arguments,
        verbose,
        callbacks,
        memory_check,
        max_memory,
    )


@dataclasses.dataclass(frozen=True)
class _RunData:
    """A run's data, all resolved before training (missing files fail in seconds, not after the run).

    Attributes:
        split: the training split less its hold-out (:class:`SplitData`).
        training: ``split``'s examples with the recipe's training augmentation, batched.
        evaluations: ``{key: tf.data.Dataset}`` of the evaluation splits, ``key`` the split, or
            ``"dataset:split"`` for another dataset.
        steps: optimizer steps per epoch.
        by_views: the stage datasets built so far, by views per image (:func:`_stage_data`).
    """

    split: SplitData
    training: "tf.data.Dataset"
    evaluations: dict
    steps: int
    by_views: dict = dataclasses.field(default_factory=dict)


def _load_data(run, dataset, data_dir, download):
    """The :class:`_RunData` of ``run``'s recipe on ``dataset`` (``data_dir``, ``download`` as in :func:`~keras_capsules.datasets.load`)."""
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
    return _RunData(split, training, evaluations, recipe.steps_per_epoch or int(training.cardinality()))


def _stage_data(run, data, stage):
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


@dataclasses.dataclass(frozen=True)
class _ResumePoint:
    """Where a run starts.

    Attributes:
        done: epochs of all stages completed at the newest checkpoint (0: a fresh start).
        stage: index in the plan of the stage that wrote that checkpoint (0 for a fresh start).
        folder: that checkpoint's folder (``None``: none).
    """

    done: int
    stage: int
    folder: str | None


def _epoch_offsets(plan):
    """``[0, e_1, e_1 + e_2, ...]``: the epochs before each stage of ``plan`` (``[(stage, stage_recipe)]``), then the total."""
    return np.cumsum([0] + [stage_recipe.epochs for _, stage_recipe in plan]).tolist()


def _resume_point(run, plan, resume):
    """The :class:`_ResumePoint` of the newest checkpoint in ``run.backup_dir`` for ``plan``; a fresh start when ``resume`` is false or there is none."""
    found = checkpoint_dirs(run.backup_dir) if resume else []
    if not found:
        return _ResumePoint(0, 0, None)
    done, folder = found[-1]
    offsets = _epoch_offsets(plan)
    # The stage that wrote it: offsets[i] < done <= offsets[i + 1] (the last stage when done is beyond the plan).
    stage = next((i for i in range(len(plan)) if done <= offsets[i + 1]), len(plan) - 1) if done else 0
    return _ResumePoint(done, stage, folder)


def _stage_callbacks(run, stage_recipe, trained, checkpoint, validation_data):
    """The callbacks of one stage's ``fit``: REM's pruning on ``validation_data`` (pruning recipes), ``checkpoint``, the stage recipe's, the caller's."""
    stage_callbacks = [checkpoint, *stage_recipe.make_callbacks(trained.loss), *(run.callbacks or [])]
    if run.recipe.pruning is not None:
        options = {k: v for k, v in run.recipe.pruning.items() if k != "validation_examples"}
        stage_callbacks.insert(
            0, pruning.LobsterPruning(validation_data, batch_size=run.recipe.batch_size, verbose=run.verbose, **options)
        )
    return stage_callbacks


@dataclasses.dataclass(frozen=True)
class _Trained:
    """What the stages did: the history (all stages), the epochs completed, the optimizer iterations at the start, the seconds spent."""

    history: dict | None
    epochs_completed: int
    iterations_at_start: int
    seconds: float


def _train_stages(run, net, plan, point, data):
    """Trains ``net`` through the stages of ``plan`` from ``point``, a checkpoint after every epoch.

    Stages before ``point.stage`` only set their trainable flags; ``net`` ends with the constructor's
    flags and compiled by the last stage (which trains the model itself; ``Recipe`` checks it).

    Returns:
        A :class:`_Trained`, or ``None`` after a dry run.
    """
    offsets = _epoch_offsets(plan)
    frozen = set()  # layer names frozen by earlier stages
    history = None
    checkpoints = []
    iterations_at_start = 0
    start = time.time()
    for index, (stage, stage_recipe) in enumerate(plan):
        set_stage_trainable(net, stage, frozen)
        if index < point.stage:
            continue
        with run.strategy.scope():
            trained = stage_model(net, stage, stage_recipe, data.steps)
            if index == point.stage and point.done:
                state = restore_checkpoint(run.backup_dir, trained)
                _check_stage(state, stage, point.folder)
                history = state["history"]
        initial_epoch = min(max(point.done - offsets[index], 0), stage_recipe.epochs)
        last = index == len(plan) - 1
        if initial_epoch == stage_recipe.epochs and not last:
            continue  # the checkpoint closed this stage: the next one starts fresh
        if not checkpoints:
            iterations_at_start = int(trained.optimizer.iterations.numpy())
        checkpoint = EpochCheckpoint(
            run.backup_dir,
            history=history,
            write=run.chief,
            epoch_offset=offsets[index],
            prefix="" if last else f"{stage.name}_",
            stage=stage.name,
        )
        checkpoints.append(checkpoint)
        stage_callbacks = _stage_callbacks(run, stage_recipe, trained, checkpoint, data.split.validation)
        if (
            run.verbose and run.memory_check != "off" and len(checkpoints) == 1
        ):  # the plan's second half: the epoch's time
            stage_callbacks.append(
                memory_plan.EpochTimeEstimate(data.steps, print_fn=lambda line: print(f"\n{line}", flush=True))
            )
        # Validation scores the model's own output; a stage training an inner layer (GLOM's contrastive stage) has no accuracy to report.
        stage_validation = data.split.validation if stage.output is None else None
        distributed_fit(
            trained,
            _stage_data(run, data, stage),
            stage_recipe.epochs,
            run.strategy,
            run.recipe.steps_per_epoch,
            initial_epoch,
            stage_callbacks,
            run.verbose,
            stage_validation,
        )
        history = checkpoint.history
    seconds = time.time() - start
    set_stage_trainable(net, recipes.Stage("trained"), frozen)  # saved with the constructor's trainable flags
    epochs_completed = max([point.done, *(c.epochs_completed for c in checkpoints if c.epochs_completed)])
    return _Trained(history, epochs_completed, iterations_at_start, seconds)


def _train_seconds(history, epochs_completed, this_call):
    """Training time of the whole run: its epochs' wall times summed over stages and resumed sessions
    (``*epoch_seconds`` in ``history``), or ``this_call``'s seconds when an epoch has no time (a run
    resumed from a checkpoint written before epoch times were recorded)."""
    times = [seconds for key, values in history.items() if key.endswith("epoch_seconds") for seconds in values]
    return round(sum(times), 2) if len(times) == epochs_completed else round(this_call, 2)


def _run_record(run, net, identity, plan, point, data, trained):
    """The run record, ``metrics.json``'s content: ``identity`` (model, dataset, variant), the evaluations, the stages' outcome, the recipe and the set-up.

    Evaluates ``net`` on ``data.evaluations`` (once, here). ``plan``, ``point`` and ``trained`` are
    the stages' plan, resume point and :class:`_Trained`.
    """
    recipe, strategy, history = run.recipe, run.strategy, trained.history
    evaluations = {
        key: distributed_evaluate(net, eval_data, strategy, verbose=run.verbose)
        for key, eval_data in data.evaluations.items()
    }
    first = next(iter(evaluations.values()), {})  # empty with `eval_on=()`: a phase that reads no test split
    return {
        **identity,
        "test_accuracy": first.get("accuracy"),
        "test_loss": first.get("loss"),
        "evaluations": evaluations,
        "epochs_completed": trained.epochs_completed,
        "resumed_from_epoch": point.done,
        "stages": [{"name": stage.name, "epochs": stage_recipe.epochs} for stage, stage_recipe in plan]
        if recipe.stages
        else None,
        "resumed_in_stage": plan[point.stage][0].name if recipe.stages and point.done else None,
        "steps_per_epoch": data.steps,
        "optimizer_iterations_at_start": trained.iterations_at_start,
        "optimizer_iterations": int(net.optimizer.iterations.numpy()),
        "train_seconds": _train_seconds(history or {}, trained.epochs_completed, trained.seconds),
        "history": history or {},
        "validation": data.split.record,
        "validation_accuracy": (history or {}).get("val_accuracy", [None])[-1],
        "recipe": dataclasses.asdict(recipe),
        "arguments": run.arguments,
        "parameters": int(net.count_params()),
        "strategy": run.strategy_name,
        "replicas": int(strategy.num_replicas_in_sync),
        "weights_sha256": weights_fingerprint(net),
        "sparsity": pruning.sparsity(net)["sparsity"] if recipe.pruning is not None else None,
    }


def _save_run(run, net, export, metrics):
    """Writes ``model.keras`` and, with ``export``, the SavedModel (chief only), then ``metrics`` as ``metrics.json`` (``metrics-worker-<i>.json`` elsewhere), last."""
    if run.chief:
        save_model(net, os.path.join(run.output, "model.keras"))
        if export:
            export_saved_model(net, os.path.join(run.output, "export"), overwrite=True)  # the run's own export
    atomic.write_json(
        os.path.join(run.output, "metrics.json" if run.chief else f"metrics-worker-{run.task_id}.json"), metrics
    )


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
    stage_epochs: dict | None = None,
    weights: str | None = None,
    freeze_backbone_epochs: int = 0,
    memory_check: str = "check",
    max_memory: int | str | None = None,
    **overrides,
) -> dict:
    """Trains ``model`` on ``dataset`` with its paper recipe (every value overridable), evaluates, saves and exports it.

    Validation protocol: the run trains on its training split minus a fixed validation hold-out
    (``validation_examples`` images drawn with a fixed seed, independent of ``seed``; see
    :mod:`keras_capsules.datasets.holdout`) and reports validation loss and metrics after every
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
        epochs, batch_size, learning_rate: override the recipe (``epochs``: every stage of a multi-stage recipe).
        output: folder for ``metrics.json``, ``model.keras``, ``export/`` and ``checkpoints/``
            (default ``runs/<model>-<dataset>``, for a folder of images ``runs/<model>-<folder name>-<hash of
            its path>``: see :func:`~keras_capsules.training.run_dataset.default_output`); a run of other images there is
            refused unless ``resume=False`` (:mod:`~keras_capsules.training.run_dataset`).
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
            generated on the fly (``expanded_mnist``, ...) hold nothing out; a registered folder of
            images (``datasets.register_folder``) holds out each class's share.
        stage_epochs: epochs per stage of a multi-stage recipe, e.g. ``{"pretrain": 20, "classifier": 5}``
            for AgreementGLOM (stages not named keep ``epochs``); ``metrics.json``'s ``stages`` records them.
        weights: fine-tune from a preset of ``model`` (``"mnist"`` or ``"EffCapsNet/mnist"``): its backbone under
            new class capsules for ``dataset``'s classes and image shape
            (:func:`~keras_capsules.applications.fine_tune.fine_tune_model`; ``metrics.json``'s ``fine_tuned``).
        freeze_backbone_epochs: with ``weights``, the first this many of the ``epochs`` train only the new
            layers (stage ``frozen_backbone``, then stage ``fine_tune`` trains everything with a fresh optimizer).
        memory_check: before the first step, the training step's memory plan
            (:mod:`~keras_capsules.training.memory_plan`: parameters, estimated peak memory and its parts,
            steps per epoch) is printed (with ``verbose``) and checked against ``max_memory``: ``"check"``
            refuses a batch that will not fit, naming the largest that does; ``"only"`` (a dry run) stops
            after the plan, trains and writes nothing, and returns ``{"dry_run": True, "plan": TrainingPlan}``
            (``None`` when every epoch is already trained); ``"off"`` skips it.
        max_memory: the memory the run may use: bytes or a size such as ``"8GB"`` (default: what this
            process can use, :func:`~keras_capsules.training.memory_plan.available_bytes`).
        **overrides: recipe fields (``optimizer=``, ``lr_decay=``, ``augmentation=``, ...) or
            constructor arguments (``router=``, ``routing_iterations=``, ...).

    Returns:
        The metrics dictionary written to ``metrics.json`` (``metrics-worker-<i>.json`` on non-chief workers).
        When ``output`` already holds the finished run of the same recipe, ``limit``, ``eval_limit`` and
        ``seed`` (and ``resume`` is true), nothing is trained: its stored metrics are returned with
        ``"already_complete": True``.
    """
    recipe = _resolve_recipe(
        model,
        dataset,
        variant,
        {"epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate},
        overrides,
        model_kwargs,
        validation_examples,
        stage_epochs,
    )
    recipe = _fine_tuning_stages(recipe, weights, freeze_backbone_epochs)
    arguments = {
        "limit": limit,
        "eval_limit": eval_limit,
        "seed": seed,
        **({"weights": weights} if weights is not None else {}),
    }
    run = _start_run(
        recipe,
        strategy,
        output or default_output(model, dataset),
        arguments,
        verbose,
        callbacks,
        memory_check,
        max_memory,
    )
    what = "train: argument `output` (CLI --output)"
    check_writable_folder(run.output, what=what)
    run_dataset.check(run.output, model, dataset, resume and not run.multi_worker)
    finished = (
        finished_run(run.output, recipe, arguments, export)
        if resume and not run.multi_worker and memory_check != "only"
        else None
    )
    if finished is not None:
        return finished
    if memory_check != "only":
        make_folder(run.output, what=what)
        if run.chief:
            run_dataset.write(run.output, dataset)
    keras.utils.set_random_seed(seed)

    data = _load_data(run, dataset, data_dir, download)
    input_shape, classes = tuple(data.training.element_spec[0].shape[1:]), datasets.num_classes(dataset)
    plan = recipe.stage_recipes()
    point = _resume_point(run, plan, resume)
    if memory_check != "off":  # before any weight is allocated: a model too large for memory is refused, not killed
        first = stages.first_stage(plan, point.done, _epoch_offsets(plan), point.stage)
        planned = stages.plan_memory(
            recipe, weights, input_shape, classes, plan, first, data.steps, run.max_memory, run.verbose
        )
        if memory_check == "only":
            return {"model": model, "dataset": dataset, "dry_run": True, "plan": planned}
    with run.strategy.scope():
        net, tuned = stages.network(recipe, weights, input_shape, classes)
        if hasattr(net, "class_names") and not datasets.info(dataset).multi_label:
            net.class_names = datasets.class_names(dataset)  # saved in model.keras: predict names the classes anywhere
        if not resume and run.chief:
            clear_checkpoints(run.backup_dir)
    trained = _train_stages(run, net, plan, point, data)
    identity = {
        "model": model,
        "dataset": dataset,
        "variant": recipe.variant,
        "fine_tuned": None if tuned is None else tuned.record(),
    }
    if datasets.info(dataset).stratified_holdout:  # a folder of images: what was read, converted and skipped
        identity["dataset_folder"] = datasets.folder_summary(dataset)
    metrics = _run_record(run, net, identity, plan, point, data, trained)
    _save_run(run, net, export, metrics)
    return metrics
