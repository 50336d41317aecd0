"""benchmarks/memory_plan.py: the measured rows -> the run file's ``memory-plan`` and ``memory-plan-calibration``
rows, the constants' fit, and the report's tables and target read from the run files it writes."""

import datetime
import json
import os

from benchmarks import memory_plan, report
from benchmarks.reporting import registry, verdicts

SPAN = (datetime.datetime(2026, 12, 5, 14, 0), datetime.datetime(2026, 12, 5, 14, 50))
BASELINE = {"measured_bytes": 790_000_000, "ru_maxrss_bytes": 789_000_000}


def plan(
    configuration, shape, batch, estimate, fixed=(800_000_000, 40_000_000, 80_000_000), live=100_000_000, ops=1000
):
    """A row as :func:`benchmarks.memory_plan.measure_row` makes it from its estimate child."""
    baseline, weights, optimizer = fixed
    return {
        "configuration": configuration,
        "input": shape,
        "batch": batch,
        "parameters": weights // 4,
        "weights_bytes": weights,
        "optimizer_bytes": optimizer,
        "graph_bytes": 30_000_000,
        "activation_bytes": 150_000_000,
        "votes_bytes": 50_000_000,
        "baseline_bytes": baseline,
        "step_live_bytes": live,
        "step_ops": ops,
        "optimizer": "Adam",
        "estimate_bytes": estimate,
        "estimate_s": 0.5,
    }


def measured(row, peak):
    return dict(
        row, measured_bytes=peak, ru_maxrss_bytes=peak - 1_000_000, ratio=round(row["estimate_bytes"] / peak, 3)
    )


CHECK = [
    measured(plan("EffCapsNet/mnist-reconstruction", "28x28x1", 8, 1_100_000_000), 1_000_000_000),
    measured(plan("CapsNet/mnist-reconstruction", "28x28x1", 16, 1_800_000_000), 2_000_000_000),
    dict(plan("MatrixCapsNet/smallnorb", "64x64x3", 128, 20_000_000_000), skipped="estimate 20.0 GB above 16 GB"),
    {"configuration": "AgreementGLOM/cifar10", "input": "64x64x3", "batch": 16, "error": "MemoryError"},
]
# Measured exactly as LIVE_FACTOR 1.25 and BYTES_PER_OP 30,000 give: fixed parts + 1.25 * live + 30,000 * ops.
CALIBRATION = [
    measured(plan("EffCapsNet/mnist-reconstruction", "28x28x1", 128, 1_000_000_000), 1_075_000_000),
    measured(
        plan(
            "FMCapsNet/cifar10", "32x32x3", 32, 1_500_000_000, (800_000_000, 4_000_000, 8_000_000), 400_000_000, 10_000
        ),
        1_612_000_000,
    ),
]
TARGET = next(v for v in registry.VERDICTS if v["rows"] == "memory-plan")


def written(tmp_path, phase, found):
    options = ["--results", str(tmp_path), "--host-name", "test host", "--phase", phase]
    path = memory_plan.write(memory_plan.parser().parse_args(options), SPAN, BASELINE, found)
    name = os.path.basename(path)
    record = json.loads(open(path).read())
    report.validate_run(record, name)
    return name, dict(record, file=name)


def test_the_rows_drop_the_ratio_and_gain_their_target_and_fitted_estimate():
    rows = memory_plan.rows_of("check", CHECK)
    assert [r["target"] for r in rows] == ["memory-plan"] * 4 and all("ratio" not in r for r in rows)
    assert rows[0] == dict({k: v for k, v in CHECK[0].items() if k != "ratio"}, target="memory-plan")
    assert rows[3] == {
        "target": "memory-plan",
        "configuration": "AgreementGLOM/cifar10",
        "input": "64x64x3",
        "batch": 16,
        "error": "MemoryError",
    }
    first, second = memory_plan.rows_of("calibrate", CALIBRATION, (1.5, 20_000))
    assert first["target"] == second["target"] == "memory-plan-calibration"
    # 800 + 40 + 80 MB fixed, 1.5 * 100 MB live, 20,000 B * 1,000 ops.
    assert first["fitted_bytes"] == 1_090_000_000
    # 800 + 4 + 8 MB fixed, 1.5 * 400 MB live, 20,000 B * 10,000 ops.
    assert second["fitted_bytes"] == 1_612_000_000
    assert "fitted_bytes" not in memory_plan.rows_of("calibrate", CHECK[2:], (1.5, 20_000))[0]


def test_the_check_run_renders_its_table_and_target(tmp_path):
    name, run = written(tmp_path, "check", CHECK)
    assert name.startswith("2026-12-05-1400-") and name.endswith("-memory-plan.json")
    assert run["baseline_bytes"] == 790_000_000 and run["ram_bytes"] > 0 and "fit" not in run
    assert "3 train_on_batch steps" in run["measured"] and run["source"] == "benchmarks/memory_plan.py"
    page = report.pages([run])["docs/benchmarks/memory.md"]
    assert "| EffCapsNet/mnist-reconstruction | 28x28x1 | 8 | 1,100 | 150 / 50 | 1,000 | 1.10 | |" in page
    assert "| CapsNet/mnist-reconstruction | 28x28x1 | 16 | 1,800 | 150 / 50 | 2,000 | 0.90 | |" in page
    assert (
        "| MatrixCapsNet/smallnorb | 64x64x3 | 128 | 20,000 | 150 / 50 | — | — | estimate 20.0 GB above 16 GB |" in page
    )
    assert "| AgreementGLOM/cifar10 | 64x64x3 | 16 | — | — / — | — | — | MemoryError |" in page
    ((host, results, used),) = verdicts.verdict_rows(TARGET, [run])
    assert (host, used) == ("test host", [run])
    assert results == [
        (
            "",
            "estimate / measured from 0.90 (CapsNet/mnist-reconstruction 28x28x1 b16) to 1.10 "
            "(EffCapsNet/mnist-reconstruction 28x28x1 b8) over 2 measured configurations; "
            "1 refused by the estimate, not run",
            True,
        )
    ]


def test_the_calibration_run_records_the_fit_and_renders_its_table(tmp_path):
    name, run = written(tmp_path, "calibrate", CALIBRATION)
    assert name.endswith("-memory-plan-calibration.json")
    assert run["fit"] == {"LIVE_FACTOR": 1.25, "BYTES_PER_OP": 30_000}
    assert [abs(r["fitted_bytes"] - r["measured_bytes"]) <= 1 for r in run["rows"]] == [True, True]
    page = report.pages([run])["docs/benchmarks/memory.md"]
    assert "| EffCapsNet/mnist-reconstruction | 28x28x1 | 128 | 100 | 1,000 | 1,075 | 1.00 |" in page
    assert "| FMCapsNet/cifar10 | 32x32x3 | 32 | 400 | 10,000 | 1,612 | 1.00 |" in page
