"""Resuming a run: where its newest checkpoint leaves the stages, and whether its folder already holds the finished run."""

import dataclasses
import json
import os

import numpy as np

from keras_capsules.training.checkpoints import CheckpointError, checkpoint_dirs


@dataclasses.dataclass(frozen=True)
class ResumePoint:
    """Where a run starts.

    Attributes:
        done: epochs of all stages completed at the newest checkpoint (0: a fresh start).
        stage: index in the plan of the stage that wrote that checkpoint (0 for a fresh start).
        folder: that checkpoint's folder (``None``: none).
    """

    done: int
    stage: int
    folder: str | None


def epoch_offsets(plan):
    """``[0, e_1, e_1 + e_2, ...]``: the epochs before each stage of ``plan`` (``[(stage, stage_recipe)]``), then the total."""
    return np.cumsum([0] + [stage_recipe.epochs for _, stage_recipe in plan]).tolist()


def resume_point(run, plan, resume):
    """The :class:`ResumePoint` of the newest checkpoint in ``run.backup_dir`` for ``plan``; a fresh start when ``resume`` is false or there is none."""
    found = checkpoint_dirs(run.backup_dir) if resume else []
    if not found:
        return ResumePoint(0, 0, None)
    done, folder = found[-1]
    offsets = epoch_offsets(plan)
    # The stage that wrote it: offsets[i] < done <= offsets[i + 1] (the last stage when done is beyond the plan).
    stage = next((i for i in range(len(plan)) if done <= offsets[i + 1]), len(plan) - 1) if done else 0
    return ResumePoint(done, stage, folder)


def check_stage(state, stage, folder):
    if state.get("stage") not in (None, stage.name):
        raise CheckpointError(
            f"restore_checkpoint: {folder} was written in stage {state['stage']!r}, but with this recipe's stage epochs it falls "
            f"in stage {stage.name!r}. Resume with the same epochs, use another output folder, or start over with resume=False (--no-resume)."
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
