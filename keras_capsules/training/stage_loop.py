"""The training loop over a recipe's stages: each stage's ``fit`` from the resume point, a checkpoint after every epoch."""

import dataclasses
import time

from keras_capsules import recipes
from keras_capsules.ops.remat import recomputation
from keras_capsules.training import memory_plan, pruning
from keras_capsules.training.checkpoints import EpochCheckpoint, restore_checkpoint
from keras_capsules.training.distribute import distributed_fit
from keras_capsules.training.resume import check_stage, epoch_offsets
from keras_capsules.training.stages import set_stage_trainable, stage_model
from keras_capsules.training.training_data import stage_data


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
class Trained:
    """What the stages did: the history (all stages), the epochs completed, the optimizer iterations at the start, the seconds spent."""

    history: dict | None
    epochs_completed: int
    iterations_at_start: int
    seconds: float


def train_stages(run, net, plan, point, data):
    """Trains ``net`` through the stages of ``plan`` from ``point``, a checkpoint after every epoch.

    Stages before ``point.stage`` only set their trainable flags; ``net`` ends with the constructor's
    flags and compiled by the last stage (which trains the model itself; ``Recipe`` checks it).

    Returns:
        A :class:`Trained`, or ``None`` after a dry run.
    """
    offsets = epoch_offsets(plan)
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
                check_stage(state, stage, point.folder)
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
        with recomputation(run.recompute or index != run.recompute_stage):  # read when the step is traced
            distributed_fit(
                trained,
                stage_data(run, data, stage),
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
    return Trained(history, epochs_completed, iterations_at_start, seconds)
