"""``train()``: a paper recipe end to end (data, model, distributed fit with resume, evaluation, ``.keras`` and SavedModel)."""

import dataclasses
import hashlib
import os
import time

import keras
import numpy as np

from keras_capsules import applications, datasets, recipes
from keras_capsules.training import atomic
from keras_capsules.training.checkpoints import EpochCheckpoint, clear_checkpoints, restore_checkpoint
from keras_capsules.training.distribute import distributed_evaluate, distributed_fit, get_strategy, is_multi_worker, worker_index
from keras_capsules.training.model_files import export_saved_model, save_model


def build_model(recipe, classes, input_shape=None, steps_per_epoch=None, **model_overrides):
    """Builds and compiles the application named by ``recipe.model`` with the recipe's optimizer, loss and metrics.

    Call it inside ``strategy.scope()`` for distributed training.

    Args:
        recipe: a :class:`~keras_capsules.recipes.Recipe`.
        classes: number of classes (unless ``recipe.model_kwargs`` sets it).
        input_shape: image shape (unless ``recipe.model_kwargs`` sets it).
        steps_per_epoch: optimizer steps per epoch, for the learning-rate schedule.
        **model_overrides: constructor arguments replacing the recipe's (``None`` values are ignored).
    """
    constructor = getattr(applications, recipe.model, None)
    if constructor is None or not callable(constructor) or isinstance(constructor, type):
        raise ValueError(f"train: unknown model {recipe.model!r}; expected an application constructor name such as 'EffCapsNet'.")
    kwargs = {**recipe.model_kwargs, **{k: v for k, v in model_overrides.items() if v is not None}}
    kwargs.setdefault("classes", classes)
    if input_shape is not None:
        kwargs.setdefault("input_shape", tuple(input_shape))
    model = constructor(**kwargs)
    model.compile(optimizer=recipe.make_optimizer(steps_per_epoch), loss=recipe.make_loss(), metrics=recipe.make_metrics())
    return model


def weights_fingerprint(model):
    """sha256 of all weights (equal fingerprints: bit-identical weights, e.g. across workers)."""
    digest = hashlib.sha256()
    for value in model.get_weights():
        digest.update(np.ascontiguousarray(value).tobytes())
    return digest.hexdigest()


def train(
    model="EffCapsNet",
    dataset="mnist_sample",
    epochs=None,
    batch_size=None,
    learning_rate=None,
    output=None,
    data_dir=None,
    limit=None,
    seed=0,
    verbose=1,
    export=True,
    *,
    variant="default",
    download=False,
    strategy="default",
    resume=True,
    eval_limit=None,
    callbacks=None,
    model_kwargs=None,
    **overrides,
):
    """Trains ``model`` on ``dataset`` with its paper recipe (every value overridable), evaluates, saves and exports it.

    Fault tolerance: after every epoch a checkpoint (weights and optimizer state) is written
    atomically to ``output/checkpoints``; rerunning the same call after a crash or ``SIGKILL``
    resumes after the last completed epoch with the same optimizer state and finishes the planned
    epochs (``resume=False`` starts over). Under ``strategy="multi_worker"`` every worker runs the
    same call (see ``docs/distributed.md``); only the chief writes checkpoints, ``model.keras`` and
    the export.

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
        **overrides: recipe fields (``optimizer=``, ``lr_decay=``, ``augmentation=``, ...) or
            constructor arguments (``router=``, ``routing_iterations=``, ...).

    Returns:
        The metrics dictionary written to ``metrics.json`` (``metrics-worker-<i>.json`` on non-chief workers).
    """
    recipe_fields = {field.name for field in dataclasses.fields(recipes.Recipe)}
    recipe_overrides = {k: v for k, v in overrides.items() if k in recipe_fields}
    model_overrides = {**{k: v for k, v in overrides.items() if k not in recipe_fields}, **(model_kwargs or {})}
    recipe = recipes.get(model, dataset, variant).replace(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate)
    recipe = dataclasses.replace(recipe, **recipe_overrides)  # explicit values, None included (e.g. augmentation=None)
    recipe = dataclasses.replace(recipe, model_kwargs={**recipe.model_kwargs, **model_overrides})  # metrics.json records the run
    strategy_name = strategy if isinstance(strategy, str) else type(strategy).__name__
    strategy = get_strategy(strategy)
    multi_worker = is_multi_worker(strategy)
    task_id, chief = worker_index(strategy)
    output = output or os.path.join("runs", f"{model}-{dataset}")
    backup_dir = os.path.join(output, "checkpoints")
    os.makedirs(output, exist_ok=True)
    keras.utils.set_random_seed(seed)

    train_data = datasets.load(
        dataset,
        recipe.train_split,
        batch_size=recipe.batch_size,
        data_dir=data_dir,
        download=download,
        seed=seed,
        limit=limit,
        augment=recipe.augmentation,
        drop_remainder=multi_worker,
        **recipe.dataset_options,
    )
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
    if recipe.steps_per_epoch:
        train_data = train_data.repeat()
    with strategy.scope():
        net = build_model(recipe, datasets.num_classes(dataset), train_data.element_spec[0].shape[1:], steps)
        if not resume and chief:
            clear_checkpoints(backup_dir)
        state = restore_checkpoint(backup_dir, net) if resume else None
    initial_epoch = state["epochs_completed"] if state else 0
    iterations_at_start = int(net.optimizer.iterations.numpy())
    checkpoint = EpochCheckpoint(backup_dir, history=state["history"] if state else None, write=chief)
    all_callbacks = [checkpoint, *recipe.make_callbacks(net.loss), *(callbacks or [])]

    start = time.time()
    distributed_fit(net, train_data, recipe.epochs, strategy, recipe.steps_per_epoch, initial_epoch, all_callbacks, verbose)
    train_seconds = time.time() - start

    evaluations = {key: distributed_evaluate(net, data, strategy, verbose=verbose) for key, data in eval_data.items()}
    first = next(iter(evaluations.values()))
    metrics = {
        "model": model,
        "dataset": dataset,
        "variant": variant,
        "test_accuracy": first.get("accuracy"),
        "test_loss": first.get("loss"),
        "evaluations": evaluations,
        "epochs_completed": len(next(iter(checkpoint.history.values()), [])) or initial_epoch,
        "resumed_from_epoch": initial_epoch,
        "steps_per_epoch": steps,
        "optimizer_iterations_at_start": iterations_at_start,
        "optimizer_iterations": int(net.optimizer.iterations.numpy()),
        "train_seconds": round(train_seconds, 2),
        "history": checkpoint.history,
        "recipe": dataclasses.asdict(recipe),
        "parameters": int(net.count_params()),
        "strategy": strategy_name,
        "replicas": int(strategy.num_replicas_in_sync),
        "weights_sha256": weights_fingerprint(net),
    }
    if chief:
        save_model(net, os.path.join(output, "model.keras"))
        if export:
            export_saved_model(net, os.path.join(output, "export"), overwrite=True)  # the run's own export
    atomic.write_json(os.path.join(output, "metrics.json" if chief else f"metrics-worker-{task_id}.json"), metrics)
    return metrics
