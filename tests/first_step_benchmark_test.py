"""benchmarks/first_step.py: one process's figures, the run file's row, and the report's table and verdict."""

import types

from benchmarks import first_step, report
from benchmarks.reporting import registry, verdicts


def test_a_process_traces_the_training_step_once_and_times_two_steps():
    figures = first_step.measure("BaselineCNN", 32, 2, 2)
    assert figures["status"] == "measured" and figures["traces"] == 1
    assert figures["first_step_s"] > 0 and figures["step_s"] > 0 and figures["parameters"] > 0


def test_a_constructor_that_refuses_the_input_is_recorded_as_refused():
    figures = first_step.measure("EffConvCapsNet", 32, 2, 1)  # EffConvCapsNet needs at least 33 px
    assert figures["status"] == "refused" and "EffConvCapsNet" in figures["why"]


def _run(rows):
    return {
        "host": {"id": "h", "cpu": "c", "cores": 2, "name": "H"},
        "date": "2026-12-02",
        "time_utc": "01:00-01:20",
        "command": "python benchmarks/first_step.py",
        "measured": "m",
        "source": "s",
        "rows": rows,
        "file": "f.json",
    }


def test_the_row_keeps_each_process_and_the_report_divides_the_medians():
    args = types.SimpleNamespace(size=64, batch=16)

    def process(traces, first, step):
        return {
            "status": "measured",
            "parameters": 10,
            "traces": traces,
            "first_step_s": first,
            "step_s": step,
        }

    row = first_step.summary_row(
        "FMCapsNet",
        args,
        {
            "before": [process(2, 21.04, 0.6), process(2, 19.0, 0.5)],
            "after": [process(1, 11.0, 0.5), process(1, 10.0, 0.7)],
        },
    )
    assert row["before_first_step_s"] == [21.0, 19.0] and row["after_traces"] == [1, 1] and row["after_step_s"] == 0.6
    page = report.pages([_run([row])])["docs/benchmarks/scaling.md"]
    # Medians 10.5 / 20.0 = 0.53 (0.525 rounds half to even).
    assert "| FMCapsNet | 64x64x3 | 16 | 2/2 · 1/1 | 21.0 / 19.0 · 11.0 / 10.0 | 0.53 | 0.55 · 0.6 | |" in page


def test_the_first_step_verdict_reads_this_packages_first_steps():
    rows = [
        {
            "target": "first-step",
            "application": a,
            "size": 64,
            "status": "measured",
            "before_first_step_s": [b],
            "after_first_step_s": [f],
            "before_traces": [2],
            "after_traces": [1],
            "before_step_s": 1,
            "after_step_s": 1,
        }
        for a, b, f in (("A", 40.0, 20.0), ("B", 90.0, 45.5))
    ]
    spec = next(v for v in registry.VERDICTS if v["target"].startswith("first step"))
    ((host, results, _),) = verdicts.verdict_rows(spec, [_run(rows)])
    assert results == [("", "longest B 45.5 s (2 applications measured)", False)]
