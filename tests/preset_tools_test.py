"""The preset tools in tools/presets read training logs and measure pruned presets correctly."""

import importlib.util
import json
import os

import keras
import numpy as np
import pytest

from keras_capsules import applications
from keras_capsules.testing.tiers import large

TOOLS = os.path.join(os.path.dirname(__file__), "..", "tools", "presets")


def tool(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(TOOLS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bar(done, steps, seconds, ending="\x08" * 10 + "\n"):
    """One Keras progress-bar update as a log holds it (ANSI colours, backspaces)."""
    return f"\x1b[1m{done}/{steps}\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m \x1b[1m{seconds}s\x1b[0m 83ms/step - loss: 0.2{ending}"


def test_logged_train_seconds_sums_each_epochs_elapsed_time_over_restarts():
    log = (
        "2026-11-24T01:00:00Z capsnet-mnist: keras-capsules train CapsNet --dataset mnist --epochs 3 --data-dir D --output O\n"
        "Epoch 1/3\n" + bar(1, 4, 30) + bar(4, 4, 0) + bar(4, 4, 41) + "\n"  # the 0 s update is the remaining time
        "Epoch 2/3\n"
        + bar(1, 4, 30)
        + bar(2, 4, 20)  # killed mid-epoch: not counted
        + "2026-11-24T02:00:00Z capsnet-mnist: keras-capsules train CapsNet --dataset mnist --epochs 3 --data-dir D --output O\n"
        "Epoch 2/3\n" + bar(4, 4, 0) + bar(4, 4, 39) + "\n"
        "Epoch 3/3\n" + bar(4, 4, 0) + bar(4, 4, 40) + bar(2, 2, 7)  # the evaluation's 2-step bar is left out
    )
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"preset_tools_{os.getpid()}.log")
    with open(path, "w") as handle:
        handle.write(log)
    try:
        make_preset = tool("make_preset")
        assert make_preset.logged_train_seconds(path) == 41 + 39 + 40
        assert make_preset.last_command(path) == "keras-capsules train CapsNet --dataset mnist --epochs 3"
    finally:
        os.remove(path)


def test_train_seconds_prefers_the_runs_per_epoch_record_when_it_covers_every_epoch(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(
        "start 2026-11-28T00:00:00Z from 8a8fbd5: keras-capsules train CapsNet\nEpoch 1/2\n"
        + bar(4, 4, 0)
        + bar(4, 4, 41)
        + "\n"
    )  # epoch 2's bar was cut by a restart
    make_preset = tool("make_preset")
    complete = {"epochs_completed": 2, "train_seconds": 60.0, "history": {"epoch_seconds": [41.25, 43.5]}}
    assert make_preset.train_seconds(complete, str(path)) == 84.8  # 84.75 rounded to 0.1 s
    partial = {"epochs_completed": 2, "train_seconds": 60.0, "history": {"epoch_seconds": [43.5]}}  # older runs
    assert make_preset.train_seconds(partial, str(path)) == 41.0
    path.write_text("no bars\n")
    assert make_preset.train_seconds({"epochs_completed": 2, "train_seconds": 60.0}, str(path)) == 60.0


def test_given_train_seconds_replace_the_runs_record_whose_epochs_include_pauses(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("")
    make_preset = tool("make_preset")
    paused = {
        "epochs_completed": 2,
        "train_seconds": 0.0,
        "history": {"epoch_seconds": [5747.24, 979.32]},
    }  # epoch 1 held a 4,817 s pause
    assert make_preset.recorded_train_seconds(None, paused, str(path)) == 6726.6  # the run's own record: pause included
    assert make_preset.recorded_train_seconds(930.04 + 979.32, paused, str(path)) == 1909.4
    with pytest.raises(SystemExit, match="--train-seconds expected a positive number"):
        make_preset.recorded_train_seconds(0.0, paused, str(path))


def test_epoch_table_writes_a_row_an_epoch_with_sparsity_only_where_the_run_pruned(tmp_path, capsys):
    epoch_table = tool("epoch_table")
    pruned = {
        "history": {
            "val_accuracy": [0.98451, 0.9935],
            "sparsity": [0.1828, 0.75640435],
            "epoch_seconds": [99.4, 1429.85],
        }
    }
    assert epoch_table.epoch_table(pruned) == [
        "| epoch | validation accuracy (%) | sparsity (%) | seconds |",
        "|---:|---:|---:|---:|",
        "| 1 | 98.45 | 18.28 | 99 |",
        "| 2 | 99.35 | 75.64 | 1,430 |",
    ]
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps({"history": {"val_accuracy": [0.5], "epoch_seconds": [61.5]}}))
    epoch_table.main([str(path)])
    printed = capsys.readouterr()
    assert printed.out.splitlines()[-1] == "| 1 | 50.00 | 62 |" and printed.err == "1 epochs, 62 s\n"
    with pytest.raises(ValueError, match="epoch_table: expected a history with one `val_accuracy` .* received 0 and 1"):
        epoch_table.epoch_table({"history": {"epoch_seconds": [3.0]}})  # trained without a hold-out
    with pytest.raises(ValueError, match=r"expected one `sparsity` an epoch \(1\), received 2"):
        epoch_table.epoch_table({"history": {"val_accuracy": [0.5], "epoch_seconds": [3.0], "sparsity": [0.1, 0.2]}})


def test_a_background_runs_log_gives_its_command_and_its_one_line_epochs(tmp_path):
    # run_in_background.sh's restart lines, and verbose=2's one line per epoch (a training API log).
    log = (
        "start 2026-11-27T00:15:31Z from 2aae3bb: keras-capsules train BaselineCNN --dataset expanded_mnist --epochs 9\n"
        "Epoch 1/9\n3438/3438 - 92s - 27ms/step - accuracy: 0.89 - val_accuracy: 0.95\n"
        "Epoch 2/9\n"  # killed here
        "start 2026-11-27T01:15:31Z from 2aae3bb: keras-capsules train BaselineCNN --dataset expanded_mnist --epochs 9 --data-dir D\n"
        "Epoch 2/9\n3438/3438 - 150s - 44ms/step - accuracy: 0.96 - val_accuracy: 0.96\n"
    )
    path = tmp_path / "train.log"
    path.write_text(log)
    make_preset = tool("make_preset")
    assert make_preset.logged_train_seconds(str(path)) == 92 + 150
    assert make_preset.last_command(str(path)) == "keras-capsules train BaselineCNN --dataset expanded_mnist --epochs 9"
    path.write_text("Epoch 1/9\n")
    assert make_preset.last_command(str(path)) is None


def test_run_in_background_refuses_anything_but_a_keras_capsules_command(tmp_path):
    import subprocess

    script = os.path.join(TOOLS, "run_in_background.sh")
    done = subprocess.run(
        ["bash", script, str(tmp_path / "work"), "--", "python", "-c", "1"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "expected '-- keras-capsules train ...'" in done.stderr
    assert not (tmp_path / "work").exists()


def test_rem_metrics_reports_the_zero_fraction_of_conv_and_vote_kernels():
    keras.utils.set_random_seed(0)
    model = applications.EffCapsNet(input_shape=(28, 28, 1), classes=10)
    prunable = [w for w in model.trainable_weights if w.path.endswith("/kernel")]
    total = sum(int(np.prod(w.shape)) for w in prunable)
    # 5x5x1x32 + 3x3x32x64 + 3x3x64x64 + 3x3x64x128 + 9x9x128 (depthwise) + 16x10x8x16: REM's "161k".
    assert total == 800 + 18_432 + 36_864 + 73_728 + 10_368 + 20_480 == 160_672
    zeros = 0
    for w in prunable:  # zero the first half (rounded down) of every kernel's entries
        values = keras.ops.convert_to_numpy(w).reshape(-1).copy()
        values[: values.size // 2] = 0.0
        zeros += int(np.sum(values == 0.0))
        w.assign(values.reshape(w.shape))
    metrics = tool("rem_metrics").rem_metrics(model, "mnist_sample", levels=11)
    remaining = total - zeros
    assert metrics["sparsity"].startswith(f"{100 * zeros / total:.1f} % of the {total:,} prunable weights")
    assert f"{remaining:,} remain" in metrics["sparsity"]
    # REM's architecture_stat: every parameter but BatchNorm's, the convolutions' biases (32 + 64 + 64 + 128 + 128,
    # zero at initialisation) and the routing bias (16 x 10) included.
    rem_weights = [keras.ops.convert_to_numpy(w) for w in model.weights if not w.path.startswith("bn")]
    rem_total = sum(v.size for v in rem_weights)
    rem_zeros = sum(v.size - np.count_nonzero(v) for v in rem_weights)
    assert rem_total == total + 416 + 160 == 161_248
    assert metrics["sparsity"].endswith(f"{100 * rem_zeros / rem_total:.2f} % of 161,248")
    trees = metrics["parse_trees_per_class"]
    per_class = [int(part.split(": ")[1].split(" ")[0]) for part in trees.split(" · ")]
    assert 1 <= sum(per_class) <= 2000 and trees.endswith(f"({sum(per_class):,} in all)")


STUB_TRAIN = """#!/usr/bin/env bash
# Stands in for `keras-capsules train`: records its arguments, then leaves what a finished run leaves.
echo "$*" >> "$CALLS"
epochs=$(grep -o -- '--epochs [0-9]*' <<< "$*" | awk '{print $2}')
out=$(grep -o -- '--output [^ ]*' <<< "$*" | awk '{print $2}')
mkdir -p "$out/checkpoints/epoch-$(printf %04d "$epochs")"
echo "{\\"epochs_completed\\": $epochs}" > "$out/metrics.json"
"""


def run_train_presets(tmp_path, runs):
    """``train_presets.sh DATA RUNS capsnet-mnist`` with a stub ``keras-capsules``; the argument lists it was called with."""
    import subprocess

    stub_dir = tmp_path / "bin"
    stub_dir.mkdir(exist_ok=True)
    stub = stub_dir / "keras-capsules"
    stub.write_text(STUB_TRAIN)
    stub.chmod(0o755)
    calls = tmp_path / "calls.txt"
    calls.write_text("")
    env = dict(os.environ, PATH=f"{stub_dir}:{os.environ['PATH']}", CALLS=str(calls))
    script = os.path.join(TOOLS, "train_presets.sh")
    subprocess.run(
        ["bash", script, "DATA", str(runs), "capsnet-mnist"], env=env, check=True, capture_output=True, text=True
    )
    return [line.split() for line in calls.read_text().splitlines()]


def test_train_presets_runs_the_phases_of_a_command_in_order_and_resumes_in_the_right_one(tmp_path):
    runs = tmp_path / "runs"
    out = str(runs / "capsnet-mnist")
    calls = run_train_presets(tmp_path, runs)  # fresh: the official schedule for 12 epochs, then the decayed 12
    assert [call[call.index("--epochs") + 1] for call in calls] == ["12", "24"]
    assert calls[1][calls[1].index("--lr-decay") + 1] == "0.9"
    assert all(call[-4:] == ["--data-dir", "DATA", "--output", out] for call in calls)
    # make_preset records both phases as the preset's command.
    assert tool("make_preset").last_command(os.path.join(out, "train.log")) == (
        "keras-capsules train CapsNet --dataset mnist --epochs 12; "
        "keras-capsules train CapsNet --dataset mnist --epochs 24 --lr-decay 0.9 --lr-decay-steps 469"
    )
    assert run_train_presets(tmp_path, runs) == []  # finished: 24 epochs in metrics.json

    # Killed in the second phase: phase 1's metrics.json (12 epochs) and a checkpoint of epoch 15.
    (runs / "capsnet-mnist" / "metrics.json").write_text('{"epochs_completed": 12}')
    os.rename(os.path.join(out, "checkpoints", "epoch-0024"), os.path.join(out, "checkpoints", "epoch-0015"))
    calls = run_train_presets(tmp_path, runs)
    assert [call[call.index("--epochs") + 1] for call in calls] == ["24"]


@large
def test_make_preset_records_the_hold_out_and_measures_raw_images(tmp_path, monkeypatch):
    from keras_capsules import datasets, presets
    from keras_capsules.presets import registry

    monkeypatch.setattr(registry, "REGISTRY_FILE", str(tmp_path / "registry.json"))
    monkeypatch.setattr(registry, "PACKAGE_DIR", str(tmp_path / "files"))
    keras.utils.set_random_seed(3)
    run = tmp_path / "run"
    run.mkdir()
    model = applications.EffCapsNet(input_shape=(28, 28, 1), classes=10)
    model.save(str(run / "model.keras"))
    held_out = {"examples": 800, "seed": 0, "selection": "uniform draw without replacement from the training split"}
    (run / "metrics.json").write_text(
        '{"model": "EffCapsNet", "dataset": "mnist_sample", "variant": "default", "epochs_completed": 1, "train_seconds": 5.0, '
        f'"validation": {json.dumps(held_out)}}}'
    )
    (run / "train.log").write_text(
        "2026-11-26T22:00:00Z x: keras-capsules train EffCapsNet --dataset mnist_sample --data-dir D\n"
    )
    try:
        tool("make_preset").main(
            [
                str(run),
                "--model",
                "EffCapsNet",
                "--name",
                "tooltest",
                "--dataset",
                "mnist_sample",
                "--subset-limit",
                "100",
                "--test-informed",
                "no",
                "--decisions",
                "one run, nothing read the test set.",
            ]
        )
    finally:
        presets.unregister_preset("EffCapsNet", "tooltest")
    (record,) = json.loads((tmp_path / "registry.json").read_text())
    images, labels = datasets.load_arrays("mnist_sample", "test")
    expected = np.mean(np.argmax(model.predict(images.astype("float32") / 255.0, verbose=0), axis=-1) == labels)
    assert record["test_examples"] == 2000 and abs(record["test_accuracy"] - expected) < 1e-6
    assert record["kwargs"]["input_shape"] == [28, 28, 1] and record["validation"] == held_out
    assert record["test_informed"] is False and record["decisions"] == "one run, nothing read the test set."
    assert record["log"] == "tools/presets/logs/effcapsnet-tooltest.md" and "evaluation" not in record


def test_a_compacted_checkpoint_resumes_with_rounded_weights_and_moments_and_the_same_iterations(tmp_path):
    from keras_capsules.training import checkpoints

    def compiled():
        keras.utils.set_random_seed(3)
        model = keras.Sequential(
            [keras.Input((3,)), keras.layers.Dense(4), keras.layers.BatchNormalization(), keras.layers.Dense(2)]
        )
        model.compile(keras.optimizers.Adam(1e-2), "mse")
        return model

    def bfloat16_truncation(values):  # the upper 16 bits of each float32, by NumPy
        return (np.asarray(values, dtype=np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)

    model = compiled()
    x = np.linspace(-1.0, 1.0, 24, dtype="float32").reshape(8, 3)
    model.fit(x, x[:, :2] * 3.0, batch_size=4, epochs=2, verbose=0)  # 4 optimizer steps
    original = checkpoints.save_checkpoint(
        str(tmp_path / "run"), model, epochs_completed=2, history={"loss": [1.0, 0.5]}
    )
    compact = tool("compact_checkpoint")
    compact.pack(original, str(tmp_path / "packed"))
    packed_bytes = os.path.getsize(tmp_path / "packed" / compact.PACKED_WEIGHTS)
    assert packed_bytes < os.path.getsize(os.path.join(original, checkpoints.WEIGHTS_FILE))

    folder = compact.unpack(str(tmp_path / "packed"), str(tmp_path / "resumed"))
    assert os.path.basename(folder) == "epoch-0002"
    resumed = compiled()
    state = checkpoints.restore_checkpoint(str(tmp_path / "resumed"), resumed)
    assert state["epochs_completed"] == 2 and state["history"] == {"loss": [1.0, 0.5]}
    assert "bfloat16" in state["compacted"]
    for trained, restored in zip(model.weights, resumed.weights):
        expected = np.asarray(trained).astype(np.float16).astype(np.float32)  # the float16 rounding, by NumPy
        np.testing.assert_array_equal(np.asarray(restored), expected)
        assert restored.dtype == "float32"
    assert int(resumed.optimizer.iterations.numpy()) == 4
    moments = [(a, b) for a, b in zip(model.optimizer.variables, resumed.optimizer.variables) if len(a.shape) > 0]
    assert moments and all(np.any(np.asarray(a)) for a, _ in moments)
    for trained, restored in moments:
        np.testing.assert_array_equal(np.asarray(restored), bfloat16_truncation(trained))
    with np.testing.assert_raises(FileExistsError):
        compact.unpack(str(tmp_path / "packed"), str(tmp_path / "resumed"))


def test_compacting_refuses_a_weight_beyond_float16s_range(tmp_path):
    from keras_capsules.training import checkpoints

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(), "mse")
    model.layers[0].kernel.assign(np.array([[1e6], [0.5]], dtype="float32"))  # float16's largest is 65,504
    original = checkpoints.save_checkpoint(str(tmp_path / "run"), model, epochs_completed=1)
    with np.testing.assert_raises_regex(ValueError, "does not fit float16"):
        tool("compact_checkpoint").pack(original, str(tmp_path / "packed"))


def test_a_weights_only_checkpoint_restarts_the_moments_at_zero_and_keeps_the_iterations(tmp_path):
    from keras_capsules.training import checkpoints

    def compiled():
        keras.utils.set_random_seed(4)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(512), keras.layers.Dense(2)])
        model.compile(keras.optimizers.Adam(1e-2), "mse")
        return model

    model = compiled()
    x = np.linspace(-1.0, 1.0, 24, dtype="float32").reshape(8, 3)
    model.fit(x, x[:, :2] * 3.0, batch_size=4, epochs=3, verbose=0)  # 6 optimizer steps
    original = checkpoints.save_checkpoint(
        str(tmp_path / "run"), model, epochs_completed=3, history={"loss": [1.0, 0.7, 0.5]}
    )
    compact = tool("compact_checkpoint")
    compact.main(["pack", original, str(tmp_path / "packed"), "--weights-only"])
    full = compact.pack(original, str(tmp_path / "full"))
    # without Adam's two bfloat16 moments per weight: at least 2 x 2 bytes per parameter fewer
    saved = os.path.getsize(os.path.join(full, compact.PACKED_WEIGHTS)) - os.path.getsize(
        tmp_path / "packed" / compact.PACKED_WEIGHTS
    )
    assert saved >= 4 * model.count_params()
    resumed = compiled()
    compact.unpack(str(tmp_path / "packed"), str(tmp_path / "resumed"))
    state = checkpoints.restore_checkpoint(str(tmp_path / "resumed"), resumed)
    assert state["epochs_completed"] == 3 and "restarted at zero" in state["compacted"]
    for trained, restored in zip(model.weights, resumed.weights):
        np.testing.assert_array_equal(np.asarray(restored), np.asarray(trained).astype(np.float16).astype(np.float32))
    assert int(resumed.optimizer.iterations.numpy()) == 6
    moments = [v for v in resumed.optimizer.variables if len(v.shape) > 0]
    assert moments and not any(np.any(np.asarray(v)) for v in moments)
