"""benchmarks/accelerator_check.py's ConsensusCapsNet step check: one record per paper router, the
library's loss for each, and the hours of an MNIST epoch computed by hand; unknown checks refused; the
records as the run file's rows, checked by hand, and the page they render."""

import datetime
import json
import os
import types

import keras
import pytest

from benchmarks import accelerator_check as check
from benchmarks import report
from keras_capsules import losses


def test_consensus_step_records_each_router_with_its_loss_and_epoch_hours(monkeypatch):
    built, timed = [], []
    monkeypatch.setattr(
        check,
        "applications",
        types.SimpleNamespace(ConsensusCapsNet=lambda **kwargs: built.append(kwargs) or kwargs["router"]),
    )
    monkeypatch.setattr(
        check,
        "measure_step_seconds",
        lambda model, loss, batch, steps, warmup: timed.append((model, loss, batch, steps, warmup)) or 1.09,
    )
    records = []
    check.check_consensus_steps(records.append, batch_size=64, steps=10, warmup=3)
    assert [r["router"] for r in records] == ["dynamic", "em", "kernel", "lstm"]
    assert all(kwargs == {"input_shape": (28, 28, 1), "classes": 10, "router": kwargs["router"]} for kwargs in built)
    # 60,000 images at batch 64: 938 steps (the last one partial); 1.09 s each is 0.284 h.
    assert all(r["hours_per_mnist_epoch"] == 0.284 and r["step_s"] == 1.09 and r["batch_size"] == 64 for r in records)
    loss_types = {model: type(loss) for model, loss, *_ in timed}
    assert loss_types["dynamic"] is losses.MarginLoss and loss_types["em"] is losses.MarginLoss
    assert (
        loss_types["kernel"] is keras.losses.SparseCategoricalCrossentropy and timed[2][1].get_config()["from_logits"]
    )
    assert loss_types["lstm"] is keras.losses.SparseCategoricalCrossentropy
    assert {entry[2:] for entry in timed} == {(64, 10, 3)}


def test_unknown_check_is_refused_naming_the_choices(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["accelerator_check.py", "--checks", "fit,speed"])
    with pytest.raises(SystemExit):
        check.main()
    assert (
        "--checks: unknown speed; expected some of preset, fit, data_parallel, consensus_step"
        in capsys.readouterr().err
    )


def test_a_backend_without_distribution_skips_data_parallel_with_its_reason(monkeypatch, tmp_path):
    monkeypatch.setattr(check.keras.backend, "backend", lambda: "torch")
    monkeypatch.setattr(check, "devices", lambda: (1, "cpu"))
    monkeypatch.setattr(check, "backend_framework", lambda: "PyTorch 2.13.0")
    output = tmp_path / "records.json"
    argv = ["accelerator_check.py", "--quick", "--checks", "data_parallel", "--output", str(output)]
    monkeypatch.setattr("sys.argv", argv)
    check.main()
    records = json.loads(output.read_text())["records"]
    assert records == [{"check": "data_parallel", "skipped": "keras.distribution supports the JAX backend only"}]
    assert check.rows_of(records) == []


def test_tensorflow_is_refused_naming_the_backends(monkeypatch, capsys):
    monkeypatch.setattr(check.keras.backend, "backend", lambda: "tensorflow")
    monkeypatch.setattr("sys.argv", ["accelerator_check.py", "--checks", "fit"])
    with pytest.raises(SystemExit):
        check.main()
    assert "needs KERAS_BACKEND=jax or torch (the backend is 'tensorflow')" in capsys.readouterr().err


RECORDS = [
    {
        "check": "preset",
        "preset": "EffCapsNet/mnist",
        "recorded_correct": 9962,
        "correct_default_precision": 9961,
        "correct_highest_precision": 9962,
        "images": 10000,
        "seconds_highest": 1.6,
        "ok": True,
    },
    {"check": "preset", "preset": "FMCapsNet/fashion_mnist", "skipped": "test set absent"},
    *(
        {
            "check": "fit",
            "model": "EffCapsNet",
            "recipe": "mnist_sample/default",
            "policy": policy,
            "batch_size": 16,
            "epochs": 2,
            "losses": [0.23204, 0.06211],
            "held_out_accuracy": accuracy,
            "step_ms": step,
            "first_epoch_s": 9.0,
            "ok": True,
        }
        for policy, step, accuracy in (("float32", 2.18, 0.9795), ("mixed_float16", 2.23, 0.9815))
    ),
    {
        "check": "data_parallel",
        "replicas": 1,
        "model": "EffCapsNet",
        "recipe": "mnist_sample/default",
        "policy": "float32",
        "batch_size": 16,
        "epochs": 2,
        "losses": [0.2, 0.1],
        "held_out_accuracy": 0.5,
        "step_ms": 2.4,
        "first_epoch_s": 9.0,
        "ok": False,
    },
    {
        "check": "consensus_step",
        "model": "ConsensusCapsNet",
        "router": "kernel",
        "batch_size": 64,
        "steps_timed": 10,
        "step_s": 0.05,
        "hours_per_mnist_epoch": 0.013,
    },
]


DEVICE = "1 x NVIDIA H200, JAX 0.11.2, Keras 3.15.1, Python 3.12.3"


def test_the_records_become_the_run_files_rows_and_render(tmp_path):
    rows = check.rows_of(RECORDS)
    assert rows == [
        dict(
            target="gpu-presets",
            preset='EffCapsNet(weights="mnist")',
            registry=9962,
            tf32=9961,
            highest=9962,
            seconds=1.6,
        ),
        dict(
            target="gpu-mixed-precision",
            model="EffCapsNet mnist_sample/default (b16)",
            policy="float32",
            step_ms=2.18,
            accuracy_pct=97.95,
            losses="0.2320, 0.0621",
        ),
        dict(
            target="gpu-mixed-precision",
            model="EffCapsNet mnist_sample/default (b16)",
            policy="mixed_float16",
            step_ms=2.23,
            accuracy_pct=98.15,
            losses="0.2320, 0.0621",
        ),
        dict(
            target="gpu-mixed-precision",
            model="EffCapsNet mnist_sample/default (b16) under keras.distribution.DataParallel (1 replica)",
            policy="float32",
            step_ms=2.4,
            accuracy_pct=50.0,
            losses="0.2000, 0.1000",
        ),
        dict(target="gpu-consensus-step", router="kernel", batch_size=64, step_s=0.05, hours_per_mnist_epoch=0.013),
    ]
    args = types.SimpleNamespace(results=str(tmp_path), host_name="test device", epochs=2)
    span = (datetime.datetime(2026, 12, 4, 9, 0), datetime.datetime(2026, 12, 4, 9, 40))
    path = check.write(args, span, RECORDS, ["preset", "fit", "data_parallel", "consensus_step"], DEVICE)
    record = json.loads(open(path).read())
    name = os.path.basename(path)
    report.validate_run(record, name)
    assert record["skipped"] == ["FMCapsNet/fashion_mnist"] and record["host"]["name"] == "test device"
    assert record["host"]["cpu"] == "NVIDIA H200"  # the device measured, not the host's CPU
    page = report.pages([dict(record, file=name)])["docs/benchmarks/checks.md"]
    assert '| EffCapsNet(weights="mnist") | 9,962 | 9,961 | 9,962 | 1.6 |' in page
    # 2.23 / 2.18 = 1.02; no bfloat16 run: a dash.
    assert "| EffCapsNet mnist_sample/default (b16) | 2.18 | 2.23 (1.02×) | — | 97.95 / 98.15 / — |" in page
    assert "| kernel | 64 | 0.05 | 0.013 |" in page


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_tests_check_reads_the_readmes_selection_per_backend(backend):
    # README.md's test command: KERAS_BACKEND=jax python -m pytest -q -n 2 -k "(numpy or builds_trains or interpret) and
    # not concurrent_stack" PATHS... &&
    # ... && KERAS_BACKEND=torch python -m pytest (the same arguments), the command's last.
    arguments = check.readme_tests(backend)
    assert arguments[:3] == ["-q", "-k", "(numpy or builds_trains or interpret) and not concurrent_stack"]
    assert "-n" not in arguments
    assert {"keras_capsules/routing", "keras_capsules/interpret"} <= set(arguments)
    assert arguments[-1] == "tests/applications_backends_test.py"


def test_pytest_outcome_reads_the_summary_and_the_failed_ids():
    output = (
        "....F..\nFAILED keras_capsules/ops/a_test.py::test_x - AssertionError\n==== 1 failed, 6 passed in 80.20s ===="
    )
    assert check.pytest_outcome(output) == "1 failed, 6 passed: keras_capsules/ops/a_test.py::test_x"
    assert check.pytest_outcome(".......\n7 passed in 3.1s (0:00:03)\n") == "7 passed"
    assert check.pytest_outcome("ImportError: no module\n") == "no pytest summary: ImportError: no module"
    record = {"check": "tests", "selection": "the README's JAX test selection", "result": "7 passed"}
    assert check.rows_of([record]) == [
        {"target": "gpu-checks", "check": "the README's JAX test selection", "result": "7 passed"}
    ]


def test_a_check_that_raises_is_recorded_and_the_rest_still_run(monkeypatch):
    def build(router, **kwargs):
        if router == "em":
            raise RuntimeError("Expected all tensors to be on the same device\nsecond line")
        return router

    monkeypatch.setattr(check, "applications", types.SimpleNamespace(ConsensusCapsNet=build))
    monkeypatch.setattr(check, "measure_step_seconds", lambda *args, **kwargs: 0.5)
    records = []
    check.check_consensus_steps(records.append, batch_size=8, steps=1, warmup=1, routers=["dynamic", "em", "lstm"])
    assert [r.get("router") for r in records] == ["dynamic", None, "lstm"]
    assert records[1] == {
        "check": "consensus_step",
        "subject": "ConsensusCapsNet router=em",
        "error": "RuntimeError: Expected all tensors to be on the same device",
    }
    assert check.rows_of(records[1:2]) == [
        {
            "target": "gpu-checks",
            "check": "consensus_step ConsensusCapsNet router=em",
            "result": "RuntimeError: Expected all tensors to be on the same device",
        }
    ]


def test_an_interrupted_runs_records_make_its_run_file(tmp_path):
    presets_file, steps_file = tmp_path / "a.json", tmp_path / "b.json"
    kept = {"device": DEVICE, "started": "2026-12-04T17:45", "updated": "2026-12-04T17:47", "records": RECORDS[:2]}
    kept["package"] = {"path": "/work/main", "commit": "410fbcd"}
    presets_file.write_text(json.dumps(kept))
    steps_file.write_text(json.dumps({"device": DEVICE, "records": RECORDS[-1:]}))  # no times: its mtime
    stamp = datetime.datetime(2026, 12, 4, 17, 52, tzinfo=datetime.timezone.utc).timestamp()
    os.utime(steps_file, (stamp, stamp))
    args = types.SimpleNamespace(results=str(tmp_path / "runs"), host_name=None, epochs=2)
    record = json.loads(open(check.write_from_records(args, [str(presets_file), str(steps_file)])).read())
    assert record["time_utc"] == "17:45-17:52" and record["host"]["cpu"] == "NVIDIA H200"
    assert record["host"]["name"] == "1 x NVIDIA H200 (2026-12-04), JAX" and record["software"] == DEVICE
    assert record["measured"].startswith(f"on {DEVICE}: the presets on their full test sets")
    assert (
        "ConsensusCapsNet's training step" in record["measured"] and "stopped at its time limit" in record["measured"]
    )
    assert [row["target"] for row in record["rows"]] == ["gpu-presets", "gpu-consensus-step"]
    assert record["skipped"] == ["FMCapsNet/fashion_mnist"] and record["package"]["commit"] == "410fbcd"
    steps_file.write_text(json.dumps({"device": "1 x NVIDIA H100, JAX 0.11.2", "records": []}))
    with pytest.raises(SystemExit, match="different devices"):
        check.write_from_records(args, [str(presets_file), str(steps_file)])
