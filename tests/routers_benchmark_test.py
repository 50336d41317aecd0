"""benchmarks/routers.py: each router's figures beside dynamic routing's -> the run file's ``routers`` rows, and the
report's table and targets read from the run file it writes."""

import datetime
import json
import os

import pytest

from benchmarks import report, routers
from benchmarks.reporting import registry, verdicts
from benchmarks.reporting import routers as routers_report

SPAN = (datetime.datetime(2026, 12, 5, 17, 25), datetime.datetime(2026, 12, 5, 17, 54))


def child(router, shape, iterations, forward_ms, train_step_ms, peak_rss_mib):
    return dict(
        router=router,
        shape=shape,
        iterations=iterations,
        forward_ms=forward_ms,
        train_step_ms=train_step_ms,
        peak_rss_mib=peak_rss_mib,
    )


FOUND = {
    ("dynamic", "fc"): {
        "rows": [child("dynamic", "fc", 1, 13.46, 30.24, 900.4), child("dynamic", "fc", 3, 21.23, 69.51, 910)]
    },
    ("kernel", "fc"): {
        "rows": [child("kernel", "fc", 1, 74.31, 303.66, 1200.6), child("kernel", "fc", 3, 216.24, 751.77, 1300.2)]
    },
    ("fm_agreement", "fc"): {"rows": [child("fm_agreement", "fc", 1, 17.96, 84.14, 950.3)]},
    ("dynamic", "conv"): {"error": "ResourceExhaustedError: OOM"},
    ("lstm", "conv"): {"rows": [child("lstm", "conv", 1, 73.9, 454.3, 1100)]},
}
ROWS = [
    {
        "target": "routers",
        "shape": "fc",
        "router": "kernel",
        "iterations": 1,
        "forward_ms": 74.3,
        "train_ms": 303.7,
        "dynamic_forward_ms": 13.5,
        "dynamic_train_ms": 30.2,
        "rss_mib": 1201,
    },
    {
        "target": "routers",
        "shape": "fc",
        "router": "kernel",
        "iterations": 3,
        "forward_ms": 216.2,
        "train_ms": 751.8,
        "dynamic_forward_ms": 21.2,
        "dynamic_train_ms": 69.5,
        "rss_mib": 1300,
    },
    {
        "target": "routers",
        "shape": "fc",
        "router": "fm_agreement",
        "iterations": 1,
        "forward_ms": 18.0,
        "train_ms": 84.1,
        "dynamic_forward_ms": 13.5,
        "dynamic_train_ms": 30.2,
        "rss_mib": 950,
    },
]


def arguments(folder, *extra):
    return routers.parser().parse_args(["--results", str(folder), "--host-name", "test host", *extra])


def target(prefix):
    return next(v for v in registry.VERDICTS if v["rows"] == "routers" and v["target"].startswith(prefix))


def test_each_router_carries_dynamic_routings_figures_at_its_shape_and_iterations():
    measured = [r for result in FOUND.values() for r in result.get("rows", [])]
    # Dynamic routing has no row of its own; the LSTM's conv row has no dynamic routing to compare with.
    assert routers.rows_of(measured) == ROWS


def test_the_run_file_renders_the_table_and_the_targets(tmp_path):
    path = routers.write(arguments(tmp_path, "--iterations", "1,3"), SPAN, FOUND)
    name = os.path.basename(path)
    record = json.loads(open(path).read())
    report.validate_run(record, name)
    assert name.startswith("2026-12-05-1725-") and name.endswith("-routers.json") and record["rows"] == ROWS
    assert "routing iterations 1,3 (single-pass routers: 1)" in record["measured"]
    assert record["failed"] == {
        "dynamic:conv": "ResourceExhaustedError: OOM",
        "lstm:conv:1": "no dynamic routing at this shape and iterations",
    }
    run = dict(record, file=name)
    page = report.pages([run])["docs/benchmarks/routers.md"]
    # 74.3 / 13.5 = 5.50, 303.7 / 30.2 = 10.06; 216.2 / 21.2 = 10.20, 751.8 / 69.5 = 10.82; 18.0 / 13.5 = 1.33,
    # 84.1 / 30.2 = 2.78.
    assert (
        "| fc | kernel | 1 | 74.3 | 5.50 | 303.7 | 10.06 |\n| fc | kernel | 3 | 216.2 | 10.20 | 751.8 | 10.82 |" in page
    )
    assert "| fc | fm_agreement | 1 | 18.0 | 1.33 | 84.1 | 2.78 |" in page
    assert verdicts.verdict_rows(target("kernel"), [run]) == [
        ("test host", [("1 iteration", "5.50× fc", False), ("3 iterations", "10.20× fc", False)], [run])
    ]
    assert verdicts.verdict_rows(target("FM"), [run]) == [("test host", [("1 iteration", "1.33× fc", False)], [run])]


def test_a_sweep_names_its_run_file_after_it(tmp_path):
    found = {
        ("dynamic", "fc_in144"): {"rows": [child("dynamic", "fc_in144", 3, 4.0, 9.0, 800)]},
        ("em", "fc_in144"): {"rows": [child("em", "fc_in144", 3, 10.0, 27.0, 820)]},
    }
    path = routers.write(arguments(tmp_path, "--sweep", "in_caps"), SPAN, found)
    record = json.loads(open(path).read())
    assert path.endswith("-routers-in-caps.json") and "with 144, 576, 1152 or 2304 input capsules" in record["measured"]
    assert record["rows"][0]["shape"] == "fc_in144" and record["failed"] == {}
    sweep = dict(record, file=os.path.basename(path))
    page = report.pages([sweep])["docs/benchmarks/routers.md"]
    assert "| fc_in144 | em | 3 | 10.0 | 2.50 | 27.0 | 3.00 |" in page
    # The targets read the fixed shapes only: beside a fixed-shape run of the same host the sweep is no second run.
    fixed = {
        ("dynamic", "fc"): {"rows": [child("dynamic", "fc", 3, 10.0, 20.0, 800)]},
        ("em", "fc"): {"rows": [child("em", "fc", 3, 30.0, 50.0, 820)]},
    }
    fixed_path = routers.write(arguments(tmp_path / "fixed"), SPAN, fixed)
    fixed_run = dict(json.loads(open(fixed_path).read()), file=os.path.basename(fixed_path))
    assert verdicts.verdict_rows(target("kernel"), [sweep, fixed_run]) == []
    em = dict(target("kernel"), items=routers_report.per_iterations("em"))
    assert verdicts.verdict_rows(em, [sweep, fixed_run]) == [
        ("test host", [("3 iterations", "3.00× fc", True)], [fixed_run])
    ]


def test_no_run_file_without_dynamic_routing(tmp_path):
    found = {("dynamic", "fc"): {"error": "killed"}, ("kernel", "fc"): FOUND["kernel", "fc"]}
    with pytest.raises(SystemExit, match="no row to write"):
        routers.write(arguments(tmp_path), SPAN, found)
    assert os.listdir(tmp_path) == []
