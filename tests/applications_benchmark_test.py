"""benchmarks/applications.py: the cases it measures, each process's figures -> the run file's ``applications`` rows,
and the report's table and target read from the run file it writes."""

import datetime
import json
import os

import pytest

from benchmarks import applications, report
from benchmarks.reporting import registry, verdicts

SPAN = (datetime.datetime(2026, 12, 5, 9, 30), datetime.datetime(2026, 12, 5, 9, 41))
FOUND = {
    "InvertedAttentionCapsNet/cifar100-simple": {
        "params": 1462989,
        "input_shape": [32, 32, 3],
        "batch": 32,
        "train_step_ms": 321.6,
        "inference_ms": 134.6,
        "images_per_s": 475.84,
        "peak_rss_mib": 1543.7,
    },
    "light CapsNet, fm_agreement (F-MNIST)": {
        "params": 705792,
        "input_shape": [28, 28, 1],
        "batch": 128,
        "inference_ms": 16.4,
        "images_per_s": 7798.2,
        "peak_rss_mib": 761.9,
    },
    "InvertedAttentionCapsNet simple, 2 iterations": {
        "params": 561297,
        "input_shape": [32, 32, 3],
        "batch": 32,
        "train_step_ms": 8012.3,
        "peak_rss_mib": 1200.2,
    },
    "MatrixCapsNet/smallnorb": {"error": "MemoryError"},
}
TARGET = next(v for v in registry.VERDICTS if v["rows"] == "applications")


def arguments(folder):
    return applications.parser().parse_args(["--results", str(folder), "--host-name", "test host"])


def test_the_cases_are_the_round_trip_configurations_and_the_papers():
    chosen = applications.cases("EffCapsNet/mnist;light CapsNet, dynamic x1 (F-MNIST);no such name", 16)
    assert list(chosen) == ["EffCapsNet/mnist", "light CapsNet, dynamic x1 (F-MNIST)"]
    assert chosen["EffCapsNet/mnist"][0] == "EffCapsNet" and chosen["EffCapsNet/mnist"][2:] == (16, "both")
    # A paper's case keeps its own batch and what it measures.
    assert chosen["light CapsNet, dynamic x1 (F-MNIST)"] == (
        "light_capsnet",
        {"router": "dynamic", "routing_iterations": 1},
        128,
        "inference",
    )


def test_the_figures_become_rows_rounded_to_integers():
    assert applications.rows_of(FOUND) == [
        {
            "target": "applications",
            "configuration": "InvertedAttentionCapsNet/cifar100-simple",
            "parameters": 1462989,
            "input": "32x32x3",
            "batch": 32,
            "train_ms": 322,
            "infer_ms": 135,
            "images_s": 476,
            "rss_mib": 1544,
        },
        {
            "target": "applications",
            "configuration": "light CapsNet, fm_agreement (F-MNIST)",
            "parameters": 705792,
            "input": "28x28x1",
            "batch": 128,
            "train_ms": None,
            "infer_ms": 16,
            "images_s": 7798,
            "rss_mib": 762,
        },
        {
            "target": "applications",
            "configuration": "InvertedAttentionCapsNet simple, 2 iterations",
            "parameters": 561297,
            "input": "32x32x3",
            "batch": 32,
            "train_ms": 8012,
            "infer_ms": None,
            "images_s": None,
            "rss_mib": 1200,
        },
    ]


def test_the_run_file_renders_the_table_and_the_target(tmp_path):
    path = applications.write(arguments(tmp_path), SPAN, FOUND)
    name = os.path.basename(path)
    record = json.loads(open(path).read())
    report.validate_run(record, name)
    assert name.startswith("2026-12-05-0930-") and name.endswith("-applications.json")
    assert record["time_utc"] == "09:30-09:41" and "median of 8 after 2 warm-up steps" in record["measured"]
    # The failed configuration is left out of the rows and named with its error.
    assert record["failed"] == {"MatrixCapsNet/smallnorb": "MemoryError"} and len(record["rows"]) == 3
    run = dict(record, file=name)
    page = report.pages([run])["docs/benchmarks/peers.md"]
    # The table shows the CIFAR-100 configurations only.
    assert "| InvertedAttentionCapsNet/cifar100-simple | 1,462,989 | 322 | 135 | 1,544 |" in page
    assert "light CapsNet" not in page
    assert verdicts.verdict_rows(TARGET, [run]) == [
        ("test host", [("", "InvertedAttentionCapsNet/cifar100-simple 1,544 MiB", True)], [run])
    ]


def test_no_run_file_when_every_configuration_failed(tmp_path):
    with pytest.raises(SystemExit, match="every configuration failed.*MemoryError"):
        applications.write(arguments(tmp_path), SPAN, {"MatrixCapsNet/smallnorb": {"error": "MemoryError"}})
    assert os.listdir(tmp_path) == []
