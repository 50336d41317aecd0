"""A training run killed with SIGKILL during epoch 2 of 3 and restarted with the same command finishes from epoch 2."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading

from keras_capsules.testing.tiers import large

DRIVER = textwrap.dedent(
    """
    import sys, time
    import keras
    from keras_capsules.training import train

    class Progress(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            print("EPOCH_BEGIN", epoch, int(self.model.optimizer.iterations.numpy()), flush=True)

        def on_train_batch_end(self, batch, logs=None):
            print("BATCH", self.epoch_now, batch, flush=True)
            if self.epoch_now == 1:
                time.sleep(0.3)  # leave the test time to kill during the second epoch

        def on_epoch_end(self, epoch, logs=None):
            print("EPOCH_END", epoch, flush=True)

    class Epoch(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            progress.epoch_now = epoch

    progress = Progress()
    train("EffCapsNet", "mnist_sample", epochs=3, batch_size=16, limit=64, eval_limit=32, output=sys.argv[1], seed=0,
          verbose=0, export=False, augmentation=None, model_kwargs={"reconstruction": False}, callbacks=[Epoch(), progress])
    print("DONE", flush=True)
    """
)


def _run(script, output, kill_at=None, timeout=240):
    """Runs the driver; with ``kill_at=(epoch, batch)`` (or any fields of its ``BATCH`` lines) sends SIGKILL right after that batch.

    Returns the output lines and the exit code.
    """
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    process = subprocess.Popen(
        [sys.executable, script, output], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    fired = []
    watchdog = threading.Timer(timeout, lambda: (fired.append(True), process.kill()))
    watchdog.start()
    lines = []
    try:
        for line in process.stdout:
            lines.append(line.strip())
            if kill_at and line.split() == ["BATCH", *map(str, kill_at)]:
                os.kill(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        watchdog.cancel()
    assert not fired, f"the training subprocess ran over {timeout} s: {lines[-10:]}"
    return lines, process.returncode


@large
def test_sigkill_during_epoch_two_then_restart_resumes_with_optimizer_state(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    output = str(tmp_path / "run")

    lines, code = _run(str(script), output, kill_at=(1, 1))
    assert code == -signal.SIGKILL, lines[-20:]
    assert "EPOCH_END 0" in lines and "EPOCH_END 1" not in lines and "DONE" not in lines
    completed = sorted(os.listdir(os.path.join(output, "checkpoints")))
    assert completed[-1] == "epoch-0001", completed  # only the finished epoch was checkpointed
    assert not os.path.exists(os.path.join(output, "metrics.json"))
    with open(os.path.join(output, "checkpoints", "epoch-0001", "state.json")) as handle:
        (first_epoch_seconds,) = json.load(handle)["history"]["epoch_seconds"]

    lines, code = _run(str(script), output)
    assert code == 0 and lines[-1] == "DONE", lines[-20:]
    begins = [line.split() for line in lines if line.startswith("EPOCH_BEGIN")]
    steps = 64 // 16
    # Resumed at epoch index 1 with the optimizer's step counter restored (4 steps done), then ran 2 epochs.
    assert begins == [["EPOCH_BEGIN", "1", str(steps)], ["EPOCH_BEGIN", "2", str(2 * steps)]], begins
    with open(os.path.join(output, "metrics.json")) as handle:
        metrics = json.load(handle)
    assert metrics["resumed_from_epoch"] == 1 and metrics["epochs_completed"] == 3
    assert metrics["optimizer_iterations_at_start"] == steps and metrics["optimizer_iterations"] == 3 * steps
    assert len(metrics["history"]["loss"]) == 3  # the killed run's first epoch is kept in the history
    # ... and its time: train_seconds covers the whole run's epochs, not only this call's.
    epoch_seconds = metrics["history"]["epoch_seconds"]
    assert len(epoch_seconds) == 3 and epoch_seconds[0] == first_epoch_seconds and min(epoch_seconds) > 0
    assert metrics["train_seconds"] == round(sum(epoch_seconds), 2)
    assert sorted(os.listdir(os.path.join(output, "checkpoints")))[-1] == "epoch-0003"


def test_restart_on_a_corrupt_checkpoint_fails_clearly(tmp_path, capsys):
    from keras_capsules import cli

    output = tmp_path / "run"
    args = [
        "train",
        "EffCapsNet",
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--limit",
        "32",
        "--eval-limit",
        "32",
        "--output",
        str(output),
        "--no-export",
        "--quiet",
        "--augmentation",
        "none",
        "--model-arg",
        "reconstruction=False",
    ]
    assert cli.main(args) == 0
    weights = output / "checkpoints" / "epoch-0001" / "checkpoint.weights.h5"
    weights.write_bytes(weights.read_bytes()[:1000])
    args[args.index("--epochs") + 1] = "2"  # one more epoch: the run is unfinished and resumes from the checkpoint
    assert cli.main(args) == 2  # the CLI reports the CheckpointError instead of silently starting over
    assert "checkpoint.weights.h5 is truncated or corrupt" in capsys.readouterr().err
