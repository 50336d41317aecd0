"""Fault-tolerant training: per-epoch checkpoints of the model *and optimizer* state, written atomically.

Layout of a backup folder::

    backup_dir/epoch-0003/checkpoint.weights.h5   model weights + optimizer variables (iterations, moments)
    backup_dir/epoch-0003/state.json              completed epochs, optimizer iterations, history, sha256

Each ``epoch-NNNN`` folder is written under a temporary name and renamed into place when complete, so
any ``epoch-NNNN`` folder is whole; the newest is the resume point. A run killed at any moment
(SIGKILL included) and restarted with the same command loses at most the unfinished epoch. A
truncated or corrupt checkpoint is reported with :class:`CheckpointError`, never half-loaded.
"""

import json
import os
import re
import shutil
import time

import keras

from keras_capsules.hashing import file_sha256
from keras_capsules.saving import atomic

WEIGHTS_FILE = "checkpoint.weights.h5"
STATE_FILE = "state.json"
FORMAT = 1
_EPOCH_DIR = re.compile(r"^epoch-(\d{4,})$")


class CheckpointError(ValueError):
    """A checkpoint is truncated, corrupt, or does not fit the model."""


def checkpoint_dirs(backup_dir):
    """``[(completed_epochs, path), ...]`` of the complete checkpoints in ``backup_dir``, oldest first."""
    if not os.path.isdir(backup_dir):
        return []
    found = [
        (int(m.group(1)), os.path.join(backup_dir, name))
        for name in os.listdir(backup_dir)
        if (m := _EPOCH_DIR.match(name))
    ]
    return sorted(found)


def build_optimizer(model):
    """Creates the optimizer's variables so that saved optimizer state has somewhere to go."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        raise CheckpointError(
            f"checkpoints: model {model.name!r} is not compiled; compile it before saving or restoring a checkpoint."
        )
    if not optimizer.built:
        optimizer.build(model.trainable_variables)
    return optimizer


def save_checkpoint(backup_dir, model, epochs_completed, history=None, keep=2, stage=None):
    """Writes ``epoch-NNNN`` for ``epochs_completed`` atomically and keeps the newest ``keep`` checkpoints.

    ``epochs_completed`` counts the epochs of every stage of a multi-stage recipe; ``stage`` names the
    stage (and so the model) that wrote it.

    Returns:
        The checkpoint folder.
    """
    optimizer = build_optimizer(model)
    final = os.path.join(backup_dir, f"epoch-{epochs_completed:04d}")
    with atomic.atomic_directory(final) as folder:
        weights = os.path.join(folder, WEIGHTS_FILE)
        model.save_weights(weights)
        state = {
            "format": FORMAT,
            "epochs_completed": int(epochs_completed),
            "optimizer_iterations": int(optimizer.iterations.numpy()),
            "model": model.name,
            "history": history or {},
            "stage": stage,
            "weights_bytes": os.path.getsize(weights),
            "weights_sha256": file_sha256(weights),
            "saved_at": time.time(),
        }
        with open(os.path.join(folder, STATE_FILE), "w") as handle:
            json.dump(state, handle, indent=2)
    for _, old in checkpoint_dirs(backup_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def read_state(folder):
    """The verified ``state.json`` of a checkpoint folder (its weights file checked against size and sha256)."""
    state_path, weights = os.path.join(folder, STATE_FILE), os.path.join(folder, WEIGHTS_FILE)
    advice = f"Delete {folder} to resume from the previous checkpoint, or start over with resume=False (--no-resume)."
    try:
        with open(state_path) as handle:
            state = json.load(handle)
        expected_bytes, expected_sha = int(state["weights_bytes"]), state["weights_sha256"]
        int(state["epochs_completed"])
    except FileNotFoundError:
        raise CheckpointError(f"restore_checkpoint: {state_path} is missing. {advice}") from None
    except (ValueError, KeyError, TypeError) as error:
        raise CheckpointError(f"restore_checkpoint: {state_path} is truncated or corrupt ({error}). {advice}") from None
    if not os.path.isfile(weights):
        raise CheckpointError(f"restore_checkpoint: {weights} is missing. {advice}")
    size = os.path.getsize(weights)
    if size != expected_bytes or file_sha256(weights) != expected_sha:
        raise CheckpointError(
            f"restore_checkpoint: {weights} is truncated or corrupt (expected {expected_bytes} bytes with sha256 "
            f"{expected_sha[:12]}..., found {size} bytes with another checksum). {advice}"
        )
    return state


def restore_checkpoint(backup_dir, model):
    """Loads the newest checkpoint of ``backup_dir`` into ``model`` (weights and optimizer state).

    Call it on a compiled model, inside the distribution strategy's scope when there is one.

    Returns:
        The checkpoint's state dict (``epochs_completed``, ``optimizer_iterations``, ``history``), or
        ``None`` when there is no checkpoint.

    Raises:
        CheckpointError: the newest checkpoint is truncated, corrupt, or does not fit ``model``.
    """
    found = checkpoint_dirs(backup_dir)
    if not found:
        return None
    folder = found[-1][1]
    state = read_state(folder)
    build_optimizer(model)
    try:
        model.load_weights(os.path.join(folder, WEIGHTS_FILE))
    except (ValueError, KeyError, OSError, TypeError) as error:
        raise CheckpointError(
            f"restore_checkpoint: {folder} does not fit model {model.name!r} ({str(error).splitlines()[0]}). It was written by a "
            "different model or recipe: use another output folder, or start over with resume=False (--no-resume)."
        ) from None
    return state


def clear_checkpoints(backup_dir):
    """Deletes every checkpoint (and temporary leftovers) in ``backup_dir``."""
    for _, folder in checkpoint_dirs(backup_dir):
        shutil.rmtree(folder, ignore_errors=True)
    atomic.remove_temporaries(backup_dir)


class EpochCheckpoint(keras.callbacks.Callback):
    """Saves a checkpoint after every epoch (see the module docstring); pairs with :func:`restore_checkpoint`.

    Args:
        backup_dir: checkpoint folder.
        history: the history restored with the checkpoint, extended epoch by epoch (with
            ``<prefix>epoch_seconds``, each epoch's wall time, validation included).
        keep: checkpoints kept (the newest ``keep``).
        write: whether this process writes (only the chief does in multi-worker training).
        epoch_offset: epochs of the earlier stages of a multi-stage recipe (checkpoint ``k`` of this
            stage is ``epoch-(epoch_offset + k)``).
        prefix: prefix of this stage's history keys.
        stage: stage name recorded in the checkpoints.

    Attributes:
        epochs_completed: epochs (of all stages) completed when the last checkpoint was due, or ``None``.
    """

    def __init__(self, backup_dir, history=None, keep=2, write=True, epoch_offset=0, prefix="", stage=None):
        super().__init__()
        self.backup_dir = backup_dir
        self.history = {k: list(v) for k, v in (history or {}).items()}
        self.keep = keep
        self.write = write
        self.epoch_offset = int(epoch_offset)
        self.prefix = prefix
        self.stage = stage
        self.epochs_completed = None
        self._epoch_start = None

    def on_train_begin(self, logs=None):
        if self.write:
            os.makedirs(self.backup_dir, exist_ok=True)
            atomic.remove_temporaries(self.backup_dir)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.time()

    def on_epoch_end(self, epoch, logs=None):
        for key, value in (logs or {}).items():
            self.history.setdefault(self.prefix + key, []).append(float(value))
        self.history.setdefault(self.prefix + "epoch_seconds", []).append(round(time.time() - self._epoch_start, 2))
        self.epochs_completed = self.epoch_offset + epoch + 1
        if self.write:
            save_checkpoint(self.backup_dir, self.model, self.epochs_completed, self.history, self.keep, self.stage)
