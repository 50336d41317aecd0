"""The run record (``metrics.json``): the evaluations and what the stages did, and the files a finished run writes."""

import dataclasses
import hashlib
import os

import numpy as np

from keras_capsules.export import export_saved_model
from keras_capsules.saving import atomic, save_model
from keras_capsules.training import pruning
from keras_capsules.training.distribute import distributed_evaluate


def weights_fingerprint(model):
    """sha256 of all weights (equal fingerprints: bit-identical weights, e.g. across workers)."""
    digest = hashlib.sha256()
    for value in model.get_weights():
        digest.update(np.ascontiguousarray(value).tobytes())
    return digest.hexdigest()


def _train_seconds(history, epochs_completed, this_call):
    """Training time of the whole run: its epochs' wall times summed over stages and resumed sessions
    (``*epoch_seconds`` in ``history``), or ``this_call``'s seconds when an epoch has no time (a run
    resumed from a checkpoint written before epoch times were recorded)."""
    times = [seconds for key, values in history.items() if key.endswith("epoch_seconds") for seconds in values]
    return round(sum(times), 2) if len(times) == epochs_completed else round(this_call, 2)


def run_record(run, net, identity, plan, point, data, trained):
    """The run record, ``metrics.json``'s content: ``identity`` (model, dataset, variant), the evaluations, the stages' outcome, the recipe and the set-up.

    Evaluates ``net`` on ``data.evaluations`` (once, here). ``plan``, ``point`` and ``trained`` are
    the stages' plan, resume point and :class:`Trained`.
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
        "recompute": run.recompute,
        "replicas": int(strategy.num_replicas_in_sync),
        "weights_sha256": weights_fingerprint(net),
        "sparsity": pruning.sparsity(net)["sparsity"] if recipe.pruning is not None else None,
    }


def save_run(run, net, export, metrics):
    """Writes ``model.keras`` and, with ``export``, the SavedModel (chief only), then ``metrics`` as ``metrics.json`` (``metrics-worker-<i>.json`` elsewhere), last."""
    if run.chief:
        save_model(net, os.path.join(run.output, "model.keras"))
        if export:
            export_saved_model(net, os.path.join(run.output, "export"), overwrite=True)  # the run's own export
    atomic.write_json(
        os.path.join(run.output, "metrics.json" if run.chief else f"metrics-worker-{run.task_id}.json"), metrics
    )
