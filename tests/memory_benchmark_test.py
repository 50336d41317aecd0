"""benchmarks/memory.py: each process's figures -> the run file's ``conv-live`` rows (app) and ``router-memory``
rows (router, one per router), and the report's tables and targets read from the run files it writes."""

import datetime
import json
import os

import pytest

from benchmarks import memory, report
from benchmarks.reporting import registry, verdicts

SPAN = (datetime.datetime(2026, 12, 5, 13, 47), datetime.datetime(2026, 12, 5, 13, 55))
SIMPLE = "InvertedAttentionCapsNet/cifar10-simple"


def app(model, iterations, peak, live, votes, phase="train", remat=True):
    return dict(
        model=model,
        batch=32,
        iterations=iterations,
        phase=phase,
        built_mib=600,
        peak_mib=peak,
        live_peak_mib=live,
        votes_mib=votes,
        remat=remat,
    )


def router(name, iterations, live, phase="forward", remat=True):
    return dict(
        router=name,
        iterations=iterations,
        phase=phase,
        built_mib=500,
        peak_mib=900,
        live_peak_mib=live,
        votes_mib=45,
        remat=remat,
    )


APP_FOUND = [
    (SIMPLE, 1, app(SIMPLE, 1, 950, 211, {"conv_caps": 882, "class_caps": 4})),
    (SIMPLE, 3, app(SIMPLE, 3, 1570, 750, {"conv_caps": 882, "class_caps": 4})),
    ("EffCapsNet/mnist", None, app("EffCapsNet/mnist", 1, 800, 50, {})),  # no vote tensor of its own: left out
    ("InvertedAttentionCapsNet/cifar100-resnet", 2, {"error": "killed"}),
]
ROUTER_FOUND = [
    *((("dynamic", n, router("dynamic", n, live))) for n, live in ((1, 146), (3, 149), (5, 149))),
    *((("kernel", n, router("kernel", n, live))) for n, live in ((1, 369), (3, 412), (5, 412))),
    ("lstm", 1, router("lstm", 1, 311)),
    ("lstm", 3, router("lstm", 3, 617)),
    ("lstm", 5, {"error": "exit status -9"}),  # one failed process leaves the LSTM router out
    ("fm_agreement", 1, router("fm_agreement", 1, 120)),  # a single-pass router runs once
]


def arguments(folder, *argv):
    return memory.arguments([*argv, "--results", str(folder), "--host-name", "test host"])


def test_the_phase_defaults_to_the_tables_and_router_mode_refuses_iterations(tmp_path):
    assert arguments(tmp_path, "app", SIMPLE).phase == "train"
    assert arguments(tmp_path, "router", "kernel").phase == "forward"
    with pytest.raises(SystemExit):
        arguments(tmp_path, "router", "kernel", "--iterations", "2")
    assert arguments(tmp_path, "router", "kernel", "--child", "--iterations", "3").iterations == "3"  # a child's count
    assert memory.counts_of(arguments(tmp_path, "router", "x"), "fm_agreement") == (1,)
    assert memory.counts_of(arguments(tmp_path, "router", "x"), "kernel") == (1, 3, 5)
    assert memory.counts_of(arguments(tmp_path, "app", "x", "--iterations", "1,3"), SIMPLE) == [1, 3]


def test_app_figures_become_conv_live_rows():
    measured = [raw for _, _, raw in APP_FOUND if "error" not in raw]
    forward = app(SIMPLE, 2, 700, 300, {"conv_caps": 882}, phase="forward", remat=False)
    assert memory.app_rows(measured + [forward]) == [
        dict(
            target="conv-live", configuration=SIMPLE, batch=32, iterations=1, rss_mib=950, live_mib=211, votes_mib=882
        ),
        dict(
            target="conv-live", configuration=SIMPLE, batch=32, iterations=3, rss_mib=1570, live_mib=750, votes_mib=882
        ),
        dict(
            target="conv-live",
            configuration=f"{SIMPLE} (forward, without remat)",
            batch=32,
            iterations=2,
            rss_mib=700,
            live_mib=300,
            votes_mib=882,
        ),
    ]


def test_router_figures_become_one_row_per_router():
    measured = [router("lstm", n, live) for n, live in ((1, 311), (3, 617), (5, 617))]
    measured += [router("kernel", 1, 400, phase="train"), router("fm_agreement", 1, 120)]
    assert memory.router_rows(measured) == [
        {"target": "router-memory", "router": "lstm", "live_1_mib": 311, "live_3_mib": 617, "live_5_mib": 617},
        {
            "target": "router-memory",
            "router": "kernel (training step)",
            "live_1_mib": 400,
            "live_3_mib": None,
            "live_5_mib": None,
        },
        {
            "target": "router-memory",
            "router": "fm_agreement",
            "live_1_mib": 120,
            "live_3_mib": None,
            "live_5_mib": None,
        },
    ]


def test_the_app_run_file_renders_the_table_and_the_target(tmp_path):
    path = memory.write(arguments(tmp_path, "app", SIMPLE, "--iterations", "1,3"), SPAN, APP_FOUND)
    name = os.path.basename(path)
    record = json.loads(open(path).read())
    report.validate_run(record, name)
    assert name.startswith("2026-12-05-1347-") and name.endswith("-conv-capsule-memory.json")
    assert record["failed"] == {"InvertedAttentionCapsNet/cifar100-resnet x2": "killed"} and len(record["rows"]) == 2
    assert record["measured"].startswith("one training step at batch 32")
    run = dict(record, file=name)
    page = report.pages([run])["docs/benchmarks/peers.md"]
    # 211 / 882 = 0.24, 750 / 882 = 0.85.
    assert f"| {SIMPLE} | 32 | 1 | 950 | 211 | 882 | 0.24 |\n| {SIMPLE} | 32 | 3 | 1,570 | 750 | 882 | 0.85 |" in page
    spec = next(v for v in registry.VERDICTS if v["rows"] == "conv-live")
    assert verdicts.verdict_rows(spec, [run]) == [("test host", [("", "at most 0.85×", True)], [run])]


def test_the_router_run_file_renders_the_table_and_the_target(tmp_path):
    path = memory.write(arguments(tmp_path, "router", "dynamic,kernel,lstm,fm_agreement"), SPAN, ROUTER_FOUND)
    name = os.path.basename(path)
    record = json.loads(open(path).read())
    report.validate_run(record, name)
    assert name.endswith("-router-forward-memory.json") and record["failed"] == {"lstm x5": "exit status -9"}
    assert [r["router"] for r in record["rows"]] == ["dynamic", "kernel", "fm_agreement"]
    run = dict(record, file=name)
    page = report.pages([run])["docs/benchmarks/routers.md"]
    assert "| dynamic | 146 | 149 | 149 |\n| kernel | 369 | 412 | 412 |\n| fm_agreement | 120 | — | — |" in page
    spec = next(v for v in registry.VERDICTS if v["rows"] == "router-memory")
    # 412 / 369 > 1: the kernel router's memory grows from 1 to 3 iterations, not from 3 to 5.
    assert verdicts.verdict_rows(spec, [run]) == [
        (
            "test host",
            [
                ("from 1 to 3 iterations", "kernel 369 → 412 MiB", False),
                ("from 3 to 5 iterations", "kernel 412 → 412 MiB", True),
            ],
            [run],
        )
    ]


def test_no_run_file_when_every_process_failed(tmp_path):
    with pytest.raises(SystemExit, match="no row to write"):
        memory.write(arguments(tmp_path, "router", "lstm"), SPAN, [("lstm", 1, {"error": "killed"})])
    assert os.listdir(tmp_path) == []
