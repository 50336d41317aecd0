"""BENCHMARKS.md is what benchmarks/report.py makes of the committed run files, and each run file says where,
when and how it was measured."""

import json
import re
import types
from pathlib import Path

import pytest

from benchmarks import WORKLOADS, report
from benchmarks.reporting import pages, registry, verdicts

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
RUN_FILES = sorted(p for p in RESULTS.glob("*.json") if re.match(r"^\d{4}-\d{2}-\d{2}-", p.name))


PAGES = report.pages(report.load_runs())


@pytest.mark.parametrize("path", sorted(PAGES))
def test_each_page_is_the_reports_output(path):
    assert (ROOT / path).read_text(encoding="utf-8") == PAGES[path], (
        f"{path} was edited by hand or a run file changed: run `python -m benchmarks report`"
    )


def test_benchmarks_md_is_short_and_every_run_is_a_link_away():
    # BENCHMARKS.md holds the headline tables (what a user reads); the rest is on the detail pages it links.
    page = PAGES["BENCHMARKS.md"]
    assert len(page.splitlines()) <= 150
    assert "(docs/benchmarks/runs.md)" in page and "(docs/benchmarks/targets.md)" in page
    runs_page = PAGES["docs/benchmarks/runs.md"]
    for path in RUN_FILES:
        assert f"/benchmarks/results/{path.name})" in runs_page, path.name
    # Every detail page is linked from BENCHMARKS.md and listed in the site's navigation.
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for path in PAGES:
        if path != "BENCHMARKS.md":
            assert f"({path})" in page and path.removeprefix("docs/") in nav, path


def test_every_table_is_on_one_detail_page():
    keys = [key for _, _, placed in pages.DETAIL.values() for key in placed]
    assert len(keys) == len(set(keys)) and set(keys) == set(registry.TABLES)
    # Every row target a committed run holds is shown by some table.
    held = {row["target"] for path in RUN_FILES for row in json.loads(path.read_text(encoding="utf-8"))["rows"]}
    assert held <= pages.TABLE_KEYS


@pytest.mark.parametrize("path", RUN_FILES, ids=lambda p: p.name)
def test_each_run_file_names_its_host_date_and_command(path):
    run = json.loads(path.read_text(encoding="utf-8"))
    host = run["host"]
    assert isinstance(host["cpu"], str) and host["cpu"].strip()
    assert isinstance(host["cores"], int) and host["cores"] >= 1
    assert isinstance(host["name"], str) and host["name"].strip()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", run["date"]) and path.name.startswith(run["date"])
    assert isinstance(run["command"], str) and run["command"].strip()
    assert isinstance(run["measured"], str) and run["measured"].strip()
    assert run["rows"] and all("target" in row for row in run["rows"])


def test_there_are_run_files():
    assert len(RUN_FILES) >= 10


def run(file, host, rows, time="10:00"):
    return {
        "file": file,
        "host": {"id": host, "cpu": "CPU", "cores": 2, "name": f"host {host}"},
        "date": "2026-01-01",
        "time_utc": time,
        "command": "c",
        "measured": "m",
        "source": "s",
        "rows": rows,
    }


def spec(target):
    return next(v for v in registry.VERDICTS if v["target"].startswith(target))


def test_a_verdict_belongs_to_its_host_and_both_figures_stand():
    def rows(peer, ours):
        return [{"target": "dr-rem", "configuration": "x", "peer_ms": peer, "ours_ms": ours}]

    runs = [run("a.json", "A", rows(1000, 400)), run("b.json", "B", rows(1000, 700))]
    found = verdicts.verdict_rows(spec("DR-CapsNet"), runs)
    # 400 / 1000 = 0.40 <= 0.5 on A; 700 / 1000 = 0.70 > 0.5 on B.
    assert [(host, results) for host, results, _ in found] == [
        ("host A", [("", "0.40", True)]),
        ("host B", [("", "0.70", False)]),
    ]


def test_seed_003_verdict_is_the_median_of_a_hosts_runs():
    def rows(fm, dr3):
        return [{"target": "seed003", "call": "predict_on_batch", "ours_fm_ms": fm, "ours_dr3_ms": dr3}]

    runs = [
        run("1.json", "A", rows(10.0, 13.0)),
        run("2.json", "A", rows(10.0, 12.0)),
        run("3.json", "A", rows(10.0, 12.5)),
    ]
    ((host, results, used),) = verdicts.verdict_rows(spec("FM-agreement network"), runs)
    # median(1.30, 1.20, 1.25) = 1.25 < 1.26.
    assert results == [("", "median of 3 runs 1.25 (1.30, 1.20, 1.25 in the order run)", False)]
    assert [r["file"] for r in used] == ["1.json", "2.json", "3.json"]


def test_a_superseded_run_left_in_the_folder_is_refused():
    rows = [{"target": "dr-rem", "configuration": "x", "peer_ms": 1000, "ours_ms": 400}]
    with pytest.raises(ValueError, match="move the superseded one out"):
        verdicts.verdict_rows(spec("DR-CapsNet"), [run("a.json", "A", rows), run("b.json", "A", rows)])


def test_a_run_file_without_a_command_is_refused(tmp_path):
    good = json.loads(RUN_FILES[0].read_text(encoding="utf-8"))
    del good["command"]
    (tmp_path / RUN_FILES[0].name).write_text(json.dumps(good), encoding="utf-8")
    with pytest.raises(ValueError, match=f"run file {RUN_FILES[0].name} has no 'command' field"):
        report.load_runs(tmp_path)


def test_the_scripts_raw_output_is_not_read(tmp_path):
    (tmp_path / "applications.json").write_text("{}", encoding="utf-8")
    assert report.load_runs(tmp_path) == []


def test_ratios_are_computed_from_the_recorded_figures():
    page = PAGES["docs/benchmarks/peers.md"] + PAGES["docs/benchmarks/targets.md"]
    # Issue 39's host: REM 3,529 ms against our 2,464 ms -> 0.70; the 2026-11-24 host: 1,667 against 598 -> 0.36.
    assert "| 2-core AMD EPYC (2026-11-26) | CapsNet, 3 iterations, b128 | 3,529 | 2,464 | 0.70 |" in page
    assert (
        "AMD EPYC, 2 vCPUs (2026-11-24): 0.36 — met" in page
        and "2-core AMD EPYC (2026-11-26): 0.70 — **missed**" in page
    )


def test_the_library_before_and_after_is_a_ratio_of_the_recorded_steps():
    rows = [
        {
            "target": "peer-pairs-before-after",
            "pair": "rem",
            "configuration": "x",
            "before_ms": 200,
            "after_ms": 150,
            "before_each_ms": [190, 210],
            "after_each_ms": [140, 160],
        }
    ]
    page = report.pages([run("a.json", "A", rows)])["docs/benchmarks/peers.md"]
    # 150 / 200 = 0.75; each process's median step as recorded, before then after.
    assert "| rem | x | 200 | 150 | 0.75 | 190/210 · 140/160 |" in page


def test_each_workload_declares_its_own_tables_and_targets():
    """A module of benchmarks/reporting/ other than the shared ones is named after a registered workload, and
    declares tables whose intro, where it names a benchmark script, names that workload's."""
    shared = {"__init__", "cells", "pages", "registry", "verdicts"}
    modules = {p.stem for p in (ROOT / "benchmarks" / "reporting").glob("*.py")} - shared
    workloads = {name for names in WORKLOADS.values() for name in names}
    assert modules <= workloads and set(registry.REPORTED) == modules
    for spec in registry.TABLES.values():
        named = set(re.findall(r"benchmarks/(\w+)\.py", spec["intro"])) - {"training_step_cost"}
        assert named <= {spec["workload"]}, (spec["key"], named)
    assert {v["workload"] for v in registry.VERDICTS} <= modules and len(registry.VERDICTS) == 20


def test_registry_refuses_a_table_or_row_target_declared_twice():
    def module(key, rows, verdicts=()):
        table = dict(key=key, heading=None, rows=(rows,), intro="", columns=[])
        return types.SimpleNamespace(TABLES=[table], VERDICTS=list(verdicts))

    with pytest.raises(ValueError, match="table 't' is declared by both a and b"):
        registry.collect({"a": module("t", "r"), "b": module("t", "s")})
    with pytest.raises(ValueError, match="row target 'r' is shown by both a and c"):
        registry.collect({"a": module("t", "r"), "c": module("u", "r")})
    with pytest.raises(ValueError, match="links to table 'w', which no workload declares"):
        registry.collect({"d": module("v", "v", [dict(target="x", table="w")])})
    tables, verdicts_ = registry.collect({"a": module("t", "r", [dict(target="x", table="t")])})
    assert tables["t"]["workload"] == "a" and verdicts_ == [dict(target="x", table="t", workload="a")]
