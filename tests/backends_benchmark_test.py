"""benchmarks/backends.py: one process's figures on the current backend, and the report's table on hand-made rows."""

import keras

from benchmarks import backends, report


def test_one_process_measures_its_backend():
    row = backends.measure("EffCapsNet", 2, 1)
    assert row["backend"] == keras.backend.backend() and row["input"] == "28x28x1"
    assert row["parameters"] > 0 and row["first_s"] > 0 and row["step_ms"] > 0


def test_merge_takes_medians_and_keeps_errors():
    found = {
        "tensorflow": [
            dict(input="28x28x1", parameters=5, version="2", xla=True, first_s=f, step_ms=s)
            for f, s in ((3.0, 10.0), (5.0, 30.0), (4.0, 20.0))
        ],
        "jax": [dict(input="28x28x1", parameters=5, version="0.1", xla=True, first_s=2.0, step_ms=8.0)],
        "torch": [{"error": "ImportError: no torch"}],
    }
    row = backends.merge("EffCapsNet", 16, found)
    assert row["tensorflow_first_s"] == 4.0 and row["tensorflow_step_ms"] == 20.0 and row["jax_step_ms"] == 8.0
    assert row["torch_error"] == "ImportError: no torch" and "torch_step_ms" not in row


def test_the_report_table_reads_every_backend():
    row = {
        "target": "backends",
        "application": "A",
        "input": "28x28x1",
        "batch": 16,
        "tensorflow_step_ms": 40.0,
        "tensorflow_first_s": 3.0,
        "tensorflow_xla": True,
        "jax_step_ms": 20.0,
        "jax_first_s": 2.5,
        "jax_xla": True,
        "torch_step_ms": 100.0,
        "torch_first_s": 0.5,
        "torch_xla": False,
    }
    run = {
        "host": {"id": "h", "cpu": "c", "cores": 2, "name": "H"},
        "date": "2026-12-03",
        "time_utc": "08:00-09:00",
        "command": "python benchmarks/backends.py",
        "measured": "m",
        "source": "s",
        "rows": [row],
        "file": "f.json",
    }
    assert (
        "| A | 28x28x1 | 16 | 40.0 · 3.0 (XLA) | 20.0 · 2.5 (XLA) | 100.0 · 0.5 | 2.50 |"
        in report.pages([run])["docs/benchmarks/scaling.md"]
    )
    del row["torch_step_ms"], row["torch_first_s"]
    row["torch_error"] = "exit status 1"
    assert (
        "| A | 28x28x1 | 16 | 40.0 · 3.0 (XLA) | 20.0 · 2.5 (XLA) | exit status 1 | — |"
        in report.pages([run])["docs/benchmarks/scaling.md"]
    )
