"""Checkpoints: optimizer state round trip, atomic writes, and clear errors for truncated, corrupt or foreign files."""

import json
import os

import keras
import numpy as np
import pytest

from keras_capsules.saving import atomic
from keras_capsules.training import checkpoints
from keras_capsules.training.checkpoints import CheckpointError


def _model(units=3):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(units)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    return model


def _trained(steps=5):
    model = _model()
    x, y = np.ones((8, 4)), np.zeros((8, 3))
    model.fit(x, y, batch_size=8, epochs=steps, verbose=0)
    return model


def test_round_trip_restores_weights_and_optimizer_state(tmp_path):
    model = _trained()
    folder = checkpoints.save_checkpoint(str(tmp_path), model, 5, {"loss": [1.0, 0.5]})
    assert os.path.basename(folder) == "epoch-0005"
    fresh = _model()
    state = checkpoints.restore_checkpoint(str(tmp_path), fresh)
    assert (
        state["epochs_completed"] == 5
        and state["optimizer_iterations"] == 5
        and state["history"] == {"loss": [1.0, 0.5]}
    )
    assert int(fresh.optimizer.iterations.numpy()) == 5
    for saved, restored in zip(model.optimizer.variables, fresh.optimizer.variables):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(saved), keras.ops.convert_to_numpy(restored)
        )  # Adam moments too
    for saved, restored in zip(model.weights, fresh.weights):
        np.testing.assert_array_equal(saved.numpy(), restored.numpy())
    assert checkpoints.restore_checkpoint(str(tmp_path / "empty"), _model()) is None


def test_keeps_the_newest_and_ignores_temporary_leftovers(tmp_path):
    model = _trained(1)
    for epoch in (1, 2, 3):
        checkpoints.save_checkpoint(str(tmp_path), model, epoch, keep=2)
    (tmp_path / ".tmp-epoch-0004-dead").mkdir()  # a writer killed mid-write
    assert [e for e, _ in checkpoints.checkpoint_dirs(str(tmp_path))] == [2, 3]
    assert checkpoints.restore_checkpoint(str(tmp_path), _model())["epochs_completed"] == 3
    atomic.remove_temporaries(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["epoch-0002", "epoch-0003"]
    checkpoints.clear_checkpoints(str(tmp_path))  # --no-resume
    assert os.listdir(tmp_path) == [] and checkpoints.restore_checkpoint(str(tmp_path), _model()) is None


def test_truncated_or_corrupt_checkpoints_are_reported(tmp_path):
    model = _trained(1)
    folder = checkpoints.save_checkpoint(str(tmp_path), model, 1)
    weights = os.path.join(folder, checkpoints.WEIGHTS_FILE)
    raw = open(weights, "rb").read()
    with open(weights, "wb") as handle:
        handle.write(raw[: len(raw) // 2])
    with pytest.raises(
        CheckpointError,
        match=r"restore_checkpoint: .*checkpoint\.weights\.h5 is truncated or corrupt.*Delete .*epoch-0001",
    ):
        checkpoints.restore_checkpoint(str(tmp_path), _model())
    with open(weights, "wb") as handle:
        handle.write(raw[:-3] + b"xyz")  # same size, other bytes
    with pytest.raises(CheckpointError, match=r"truncated or corrupt"):
        checkpoints.restore_checkpoint(str(tmp_path), _model())
    with open(os.path.join(folder, checkpoints.STATE_FILE), "w") as handle:
        handle.write('{"epochs_completed": 1, "weights_')
    with pytest.raises(CheckpointError, match=r"state\.json is truncated or corrupt"):
        checkpoints.restore_checkpoint(str(tmp_path), _model())


def test_a_checkpoint_of_another_model_is_refused(tmp_path):
    checkpoints.save_checkpoint(str(tmp_path), _trained(1), 1)
    with pytest.raises(CheckpointError, match=r"does not fit model .*resume=False"):
        checkpoints.restore_checkpoint(str(tmp_path), _model(units=5))


def test_callback_saves_every_epoch_and_extends_history(tmp_path):
    model = _model()
    callback = checkpoints.EpochCheckpoint(str(tmp_path), history={"loss": [9.0]})
    model.fit(
        np.ones((8, 4)), np.zeros((8, 3)), batch_size=4, epochs=3, initial_epoch=1, callbacks=[callback], verbose=0
    )
    state = checkpoints.read_state(checkpoints.checkpoint_dirs(str(tmp_path))[-1][1])
    assert state["epochs_completed"] == 3 and state["optimizer_iterations"] == 4 and len(state["history"]["loss"]) == 3


def test_atomic_file_never_leaves_a_partial_file(tmp_path):
    path = str(tmp_path / "metrics.json")
    atomic.write_json(path, {"a": 1})
    with pytest.raises(RuntimeError):
        with atomic.atomic_file(path) as temporary:
            with open(temporary, "w") as handle:
                handle.write('{"a": 2, "half')
            raise RuntimeError("killed mid-write")
    assert json.load(open(path)) == {"a": 1} and os.listdir(tmp_path) == ["metrics.json"]
    target = str(tmp_path / "export")
    for version in (1, 2):
        with atomic.atomic_directory(target) as folder:
            with open(os.path.join(folder, "v"), "w") as handle:
                handle.write(str(version))
    assert open(os.path.join(target, "v")).read() == "2" and sorted(os.listdir(tmp_path)) == ["export", "metrics.json"]
