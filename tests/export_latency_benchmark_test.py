"""benchmarks/export_latency.py: each runtime's timings -> the run file's ``export`` rows, checked against figures
worked out by hand, and the report's table and target read from the run file it writes."""

import datetime
import json
import os

from benchmarks import export_latency, report
from benchmarks.reporting import registry, verdicts

SPAN = (datetime.datetime(2026, 12, 5, 13, 0), datetime.datetime(2026, 12, 5, 13, 20))
FOUND = [
    {
        "model": "EffCapsNet/mnist",
        "savedmodel": {"1": 1.034, "64": 12.551},
        "onnxruntime": {"1": 0.244, "64": 7.876},
        "litert": {"1": 0.251, "64": 8.0},
    },
    {
        "model": "EffCapsNet/smallnorb",
        "savedmodel": {"1": 2.5, "64": 80.0},
        "onnxruntime": {"error": "onnxruntime.capi.onnxruntime_pybind11_state.Fail: bad model"},
        "litert": {"1": 2.2, "64": 70.004},
    },
    {
        "model": "CapsNet/mnist",
        "savedmodel": {"1": 4.06, "64": 89.57},
        "onnxruntime": {"1": 1.46, "64": 80.54},
        "litert": {"1": 1.35, "64": 96.0},
    },
]
TARGET = next(v for v in registry.VERDICTS if v["rows"] == "export")


def test_the_timings_become_rows_and_a_failed_runtime_its_error():
    effcaps, failed, capsnet = export_latency.rows_of(FOUND, [1, 64])
    assert effcaps == {
        "target": "export",
        "configuration": "EffCapsNet/mnist",
        "savedmodel_b1": 1.03,
        "savedmodel_b64": 12.55,
        "onnx_b1": 0.24,
        "onnx_b64": 7.88,
        "litert_b1": 0.25,
        "litert_b64": 8.0,
    }
    assert failed == {
        "target": "export",
        "configuration": "EffCapsNet/smallnorb",
        "savedmodel_b1": 2.5,
        "savedmodel_b64": 80.0,
        "onnx_error": "onnxruntime.capi.onnxruntime_pybind11_state.Fail: bad model",
        "litert_b1": 2.2,
        "litert_b64": 70.0,
    }
    assert capsnet["configuration"] == "CapsNet/mnist" and capsnet["litert_b64"] == 96.0
    assert export_latency.rows_of(FOUND[:1], [1])[0] == {
        "target": "export",
        "configuration": "EffCapsNet/mnist",
        "savedmodel_b1": 1.03,
        "onnx_b1": 0.24,
        "litert_b1": 0.25,
    }


def test_the_run_file_renders_the_table_and_the_target(tmp_path):
    args = export_latency.parser().parse_args(
        ["--results", str(tmp_path), "--host-name", "test host", "--repeats", "20"]
    )
    path = export_latency.write(args, SPAN, FOUND)
    name = os.path.basename(path)
    record = json.loads(open(path).read())
    report.validate_run(record, name)
    assert name.startswith("2026-12-05-1300-") and name.endswith("-export-latency.json")
    assert "median of 20 calls after 5 warm-up calls at batch 1, 64, ms" in record["measured"]
    assert [r["configuration"] for r in record["rows"]] == ["EffCapsNet/mnist", "EffCapsNet/smallnorb", "CapsNet/mnist"]
    run = dict(record, file=name)
    page = report.pages([run])["docs/benchmarks/peers.md"]
    assert "| EffCapsNet/mnist | 1.03 | 12.55 | 0.24 | 7.88 | 0.25 | 8.0 |" in page
    assert "| EffCapsNet/smallnorb | 2.5 | 80.0 | — | — | 2.2 | 70.0 |" in page
    assert "| CapsNet/mnist |" not in page  # the table shows Efficient-CapsNet's rows only
    # The fastest batch-1 format of EffCapsNet/mnist: ONNX Runtime's 0.24 ms, under 2 ms.
    assert verdicts.verdict_rows(TARGET, [run]) == [
        ("test host", [("", "0.24 ms (ONNX Runtime); SavedModel 1.03 ms", True)], [run])
    ]


def test_the_target_gives_no_verdict_without_effcapsnets_batch_one_figures():
    from benchmarks.reporting import export_latency as export_report

    assert export_report.effcaps_b1([{"configuration": "CapsNet/mnist", "onnx_b1": 1.0}]) == []
    partial = {"configuration": "EffCapsNet/mnist", "onnx_b1": None, "onnx_error": "no runtime", "litert_b1": 0.9}
    assert export_report.effcaps_b1([partial]) == [("", [0.9], "0.9 ms (LiteRT); SavedModel — ms")]
