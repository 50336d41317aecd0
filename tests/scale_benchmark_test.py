"""benchmarks/scale.py end to end on tiny settings (its run file, read by benchmarks/report.py), its memory
guard, and the report's scale tables and verdicts on hand-made rows."""

import argparse
import os
import subprocess
import sys

import pytest
from repo_scripts import ROOT

from benchmarks import common, report, scale
from benchmarks.reporting import first_step as first_step_report
from benchmarks.reporting import scale as scale_report
from keras_capsules import host
from keras_capsules.testing.tiers import large


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scale")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "scale",
            "--quick",
            "--only",
            "BaselineCNN",
            "--results",
            str(folder),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return folder


@large
def test_quick_run_writes_a_run_file_the_report_reads(quick_run):
    (run,) = report.load_runs(quick_run)  # validated: host, date, command, rows of a known target
    assert run["file"].endswith("-scale.json") and "--quick" in run["command"]
    (row,) = run["rows"]
    assert (row["application"], row["configuration"], row["input"], row["batch"], row["status"]) == (
        "BaselineCNN",
        "BaselineCNN/matched",
        "32x32x3",
        2,
        "measured",
    )
    # achieved GFLOP/s: the counted GFLOP per image times the batch, over the step
    assert row["gflops"] == pytest.approx(row["gflop_per_image"] * 2 / (row["step_ms"] / 1e3), rel=0.01)
    assert (
        row["gflop_per_image"] > 0
        and row["matmul_gflops"] > 0
        and row["first_step_s"] > 0
        and row["infer_ms_per_image"] > 0
    )
    assert (
        200 < row["train_peak_mb"] <= row["peak_mb"] < 8000
    )  # TensorFlow alone takes about 700 MB; the peak after inference too
    page = report.pages([run])["docs/benchmarks/scaling.md"]
    assert "## Capsules at larger inputs" in page
    assert (
        f"| BaselineCNN (host matrix product {row['matmul_gflops']:g} GFLOP/s) | {round(row['step_ms']):,} · {row['train_peak_mb']:,} | — | — | — |"
        in page
    )


def test_the_guard_stops_a_process_that_passes_the_limit_and_says_when():
    args = argparse.Namespace(
        batch=2, steps=1, warmup=0, matmul=64, skip_over_memory=0.05, timeout=None
    )  # 50 MB: passed at import
    row = scale.run_child("BaselineCNN", 32, args)
    assert (
        row["status"] == "skipped"
        and "resident memory passed 0.05 GB" in row["why"]
        and "stopped by the guard" in row["why"]
    )
    args = argparse.Namespace(
        batch=2, steps=1, warmup=0, matmul=64, skip_over_memory=None, timeout=0.5
    )  # importing TensorFlow takes longer
    row = scale.run_child("BaselineCNN", 32, args)
    assert row["status"] == "skipped" and row["why"] == "not done within 0.5 s during the start; stopped by the guard"


def test_a_model_whose_weights_and_adam_state_pass_the_limit_is_not_run():
    phases = []
    row = scale.measure(
        "BaselineCNN", 32, 2, 1, 0, 64, 1e6, phases.append
    )  # a 1 MB limit; 16 bytes x 164,000 parameters
    assert row["status"] == "skipped" and row["why"].startswith(
        f"estimated at least {16 * row['parameters'] / 1e6:,.0f} MB"
    )
    assert phases == ["build"]  # never trained


def _row(application, size, **figures):
    base = {"target": "scale", "application": application, "size": size, "status": "measured"}
    return {**base, **figures}


def test_the_default_guard_is_four_fifths_of_the_available_memory(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n")
    # 0.8 x 20,000,000 KiB x 1,024 bytes = 16.384 GB
    assert scale.default_memory_limit_gb(str(meminfo)) == 16.4
    meminfo.write_text("MemTotal:       24000000 kB\n")
    assert scale.default_memory_limit_gb(str(meminfo)) is None
    assert scale.default_memory_limit_gb(str(tmp_path / "absent")) is None


def test_scale_verdicts_on_hand_made_rows():
    cnn = _row("BaselineCNN", 64, step_ms=200.0, train_peak_mb=900, gflop_per_image=1.0, gflops=80.0, first_step_s=5.0)
    slow_but_efficient = _row(
        "A", 64, step_ms=3000.0, train_peak_mb=7900, gflop_per_image=40.0, gflops=45.0, first_step_s=12.0
    )
    fast = _row("B", 64, step_ms=1800.0, train_peak_mb=2000, gflop_per_image=2.0, gflops=2.0, first_step_s=31.0)
    skipped = {
        "target": "scale",
        "application": "C",
        "size": 128,
        "status": "skipped",
        "why": "resident memory passed 16 GB",
    }
    refused = {"target": "scale", "application": "D", "size": 128, "status": "refused", "why": "fixed input"}
    rows = [cnn, slow_but_efficient, fast, skipped, refused]
    # A: 15x the CNN's step, but 40x its arithmetic at 45 / 80 GFLOP/s >= half: met; B: 9x the CNN's step: met.
    ((_, values, figure),) = scale_report.scale_time_items(rows)
    assert values == pytest.approx([min(15 / 10, 80 / 90), 9 / 10]) and max(values) <= 1.0
    assert figure.startswith("worst B: step 9.00× the CNN's")
    ((_, values, figure),) = scale_report.scale_memory_items(64, 8000)(rows)
    assert values == pytest.approx([900 / 8000, 7900 / 8000, 2000 / 8000]) and figure == "largest A 7,900 MB; 3 built"
    ((_, values, figure),) = scale_report.scale_memory_items(128, 16000)(
        rows
    )  # the refused one does not build: not counted
    assert values == [float("inf")] and figure == "C resident memory passed 16 GB; 1 built"
    ((_, values, figure),) = first_step_report.scale_first_step_items(rows)
    assert max(values) == 31.0 and figure == "longest B 31 s (3 applications measured)"
    slower = _row("E", 64, step_ms=2400.0, train_peak_mb=2000, gflop_per_image=2.0, gflops=2.0, first_step_s=45.0)
    ((_, values, figure),) = scale_report.scale_time_items(
        rows + [slower]
    )  # B at 9x meets the step target; E at 12x does not
    assert figure.startswith("worst E: step 12.00× the CNN's") and "also missing" not in figure
    ((_, values, figure),) = scale_report.scale_time_items(
        rows + [slower, dict(slower, application="F", step_ms=2200.0)]
    )
    assert figure.endswith("; also missing both: F (11.00×)")
    ((_, values, figure),) = first_step_report.scale_first_step_items(rows + [slower])
    assert figure == "longest E 45 s; also over 30 s: B 31 s (4 applications measured)"
    entry = scale_report.scale_by_application(rows)[1]
    assert (
        scale_report.scale_cell(64)(entry) == "3,000 · 7,900 (15.00× · 8.78×)"
        and scale_report.scale_cell(128)(entry) == "—"
    )
    assert (
        scale_report.scale_cell(128)(scale_report.scale_by_application(rows)[3])
        == "skipped: resident memory passed 16 GB"
    )


def test_an_unmeasured_target_has_no_row():
    page = "\n".join(report.pages([]).values())
    assert "every application trains at 64×64×3" not in page


def test_a_before_run_has_a_table_of_its_own_and_no_verdict(tmp_path):
    # An earlier package put first on PYTHONPATH, as `git archive COMMIT keras_capsules` unpacks it, with its COMMIT file;
    # the record names it even in a process started in the repository root, whose own package comes first on its
    # path (`python -m benchmarks scale --before`): the children, started in benchmarks/, import the earlier one.
    (tmp_path / "keras_capsules").mkdir()
    (tmp_path / "keras_capsules" / "__init__.py").write_text("")
    (tmp_path / "COMMIT").write_text("92d0b61cf5a5b01ee6ecfc70e21a9112c100f5ee\n")
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "from benchmarks import runs; print(runs.package_record())",
        ],
        cwd=ROOT,
        env={"PYTHONPATH": str(tmp_path), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert found.stdout.strip() == repr(
        {"path": str(tmp_path), "commit": "92d0b61cf5a5b01ee6ecfc70e21a9112c100f5ee"}
    ), found.stderr
    cnn = dict(
        _row("BaselineCNN", 64, step_ms=200.0, train_peak_mb=900, gflop_per_image=1.0, gflops=80.0, first_step_s=5.0),
        target="scale-before",
    )
    slow = dict(
        _row("A", 64, step_ms=30000.0, train_peak_mb=9000, gflop_per_image=2.0, gflops=1.07, first_step_s=90.0),
        target="scale-before",
    )
    run = {
        "host": {"id": "h", "name": "H", "cpu": "c", "cores": 2},
        "date": "2026-11-28",
        "time_utc": "15:00-16:00",
        "command": "python -m benchmarks scale --before",
        "measured": "m",
        "rows": [cnn, slow],
        "file": "2026-11-28-1500-h-scale-before.json",
    }
    page = "\n".join(report.pages([run]).values())  # every page: the verdicts' too
    assert "## Capsules at larger inputs, before the scaling work" in page
    assert "| A | — | 30,000 · 9,000 (150.00× · 10.00×) | — | 1.07 · 90 s (0.01×) |" in page
    assert (
        "## Capsules at larger inputs\n" not in page and "64×64×3 step within 10×" not in page
    )  # no verdict reads a before run


def test_a_cpu_without_avx512_is_named_as_another_kind_of_host():
    without = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 fma\n"
    with_it = "model name\t: AMD EPYC\nflags\t\t: fpu avx2 avx512f avx512_bf16\n"
    assert common.cpu_description(without) == "AMD EPYC without AVX-512"
    assert common.cpu_description(with_it) == "AMD EPYC"
    # Nothing to read: the platform's name, and no claim about the flags.
    assert common.cpu_description("") == host.cpu_name("")


def test_the_host_is_read_by_the_repository_whatever_package_a_run_measures(tmp_path):
    """A ``--before`` run measures an earlier keras_capsules first on its path (one with no host module, as
    before 2026-12-04): naming the host must not import it from there."""
    old = tmp_path / "keras_capsules"
    old.mkdir()
    (old / "__init__.py").write_text("")
    code = (
        "import keras_capsules, benchmarks.common as c; "
        "print(keras_capsules.__file__); print(c.repository_host().__file__); print(c.cpu())"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    package, reader, name = done.stdout.splitlines()[-3:]
    assert package == str(old / "__init__.py")
    assert reader == str(ROOT / "keras_capsules" / "host.py")
    assert name.startswith(host.cpu_name())


def test_every_committed_scale_row_rates_its_own_count():
    """A measured row's achieved GFLOP/s is its counted GFLOP per image times the batch over its step: a count
    corrected after a run (as the loop rows' were) must carry its rate along, or the tables publish a rate
    that no figure of the row gives."""
    import json

    files = sorted((ROOT / "benchmarks" / "results").glob("*-scale*.json"))
    assert files, "no scale run file committed"
    for path in files:
        for row in json.loads(path.read_text())["rows"]:
            if row.get("status") != "measured":
                continue
            rate = row["gflop_per_image"] * row["batch"] / (row["step_ms"] / 1e3)
            assert row["gflops"] == pytest.approx(rate, abs=0.006), (path.name, row["application"], row["size"])
