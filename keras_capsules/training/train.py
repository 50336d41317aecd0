"""``train()``: a paper recipe end to end (data, model, distributed fit with resume, evaluation, ``.keras`` and SavedModel)."""

import dataclasses
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import keras

from keras_capsules import datasets, errors, recipes
from keras_capsules.saving.output_paths import check_writable_folder, make_folder
from keras_capsules.training import memory_plan, run_dataset, stages
from keras_capsules.training.checkpoints import clear_checkpoints
from keras_capsules.training.distribute import get_strategy, is_multi_worker, worker_index
from keras_capsules.training.resume import epoch_offsets, finished_run, resume_point
from keras_capsules.training.run_dataset import default_output
from keras_capsules.training.run_recipe import fine_tuning_stages, resolve_recipe
from keras_capsules.training.run_record import run_record, save_run
from keras_capsules.training.stage_loop import train_stages
from keras_capsules.training.stages import (  # noqa: F401 (build_model ... stage_model: also imported from here)
    build_model,
    construct_model,
    set_stage_trainable,
    stage_model,
)
from keras_capsules.training.training_data import (  # noqa: F401 (SplitData, split_training_data: also imported from here)
    SplitData,
    load_data,
    split_training_data,
)

if TYPE_CHECKING:
    import tensorflow as tf


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
        recompute: whether stage ``recompute_stage`` trains with rematerialisation (:func:`train`'s ``recompute``
            as the memory plan resolved it); the other stages always do.
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
    recompute: bool = True
    recompute_stage: int = 0

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
    recompute: str | bool = "auto",
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
        limit: use only the first ``limit`` training examples (a folder of images: ``limit`` drawn class by class,
            :func:`~keras_capsules.datasets.first_examples`). eval_limit: the same for evaluation.
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
        recompute: the library's rematerialisation in training (``ConvCaps``' ``remat``, the kernel, LSTM and EM
            routers' recomputed iterations: less memory, more time): ``"auto"`` (default) trains without it
            when the memory plan finds that the step fits with room to spare
            (:func:`~keras_capsules.training.memory_plan.plan_fastest`), else with it, and with it when no
            plan is made (``memory_check="off"``); ``True`` or ``False`` as told. The choice holds for the
            stage the plan is made for (the first one trained); later stages rematerialise.
            ``metrics.json``'s ``recompute`` records it.
        **overrides: recipe fields (``optimizer=``, ``lr_decay=``, ``augmentation=``, ...) or
            constructor arguments (``router=``, ``routing_iterations=``, ...).

    Returns:
        The metrics dictionary written to ``metrics.json`` (``metrics-worker-<i>.json`` on non-chief workers).
        When ``output`` already holds the finished run of the same recipe, ``limit``, ``eval_limit`` and
        ``seed`` (and ``resume`` is true), nothing is trained: its stored metrics are returned with
        ``"already_complete": True``.
    """
    if recompute != "auto" and not isinstance(recompute, bool):
        errors.fail("train", "recompute", "'auto', True or False", recompute, TypeError)
    recipe = resolve_recipe(
        model,
        dataset,
        variant,
        {"epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate},
        overrides,
        model_kwargs,
        validation_examples,
        stage_epochs,
    )
    recipe = fine_tuning_stages(recipe, weights, freeze_backbone_epochs)
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

    data = load_data(run, dataset, data_dir, download)
    input_shape, classes = tuple(data.training.element_spec[0].shape[1:]), datasets.num_classes(dataset)
    plan = recipe.stage_recipes()
    point = resume_point(run, plan, resume)
    first = stages.first_stage(plan, point.done, epoch_offsets(plan), point.stage)
    run = dataclasses.replace(run, recompute=recompute is not False, recompute_stage=first)
    if memory_check != "off":  # before any weight is allocated: a model too large for memory is refused, not killed
        planned = stages.plan_memory(
            recipe, weights, input_shape, classes, plan, first, data.steps, run.max_memory, run.verbose, recompute
        )
        run = dataclasses.replace(run, recompute=planned.recompute)
        if memory_check == "only":
            return {"model": model, "dataset": dataset, "dry_run": True, "plan": planned}
    with run.strategy.scope():
        net, tuned = stages.network(recipe, weights, input_shape, classes)
        if hasattr(net, "class_names") and not datasets.info(dataset).multi_label:
            net.class_names = datasets.class_names(dataset)  # saved in model.keras: predict names the classes anywhere
        if not resume and run.chief:
            clear_checkpoints(run.backup_dir)
    trained = train_stages(run, net, plan, point, data)
    identity = {
        "model": model,
        "dataset": dataset,
        "variant": recipe.variant,
        "fine_tuned": None if tuned is None else tuned.record(),
    }
    if datasets.info(dataset).stratified_holdout:  # a folder of images: what was read, converted and skipped
        identity["dataset_folder"] = datasets.folder_summary(dataset)
    metrics = run_record(run, net, identity, plan, point, data, trained)
    save_run(run, net, export, metrics)
    return metrics
