"""benchmarks/profile_step.py: the --input-shape argument and the --json record of one profiled step."""

import argparse
import json
import sys

import pytest

from benchmarks import profile_step as profile


def test_input_shape_arg_parses_three_positive_integers():
    assert profile.input_shape_arg("64,64,3") == (64, 64, 3)
    for text in ("64,64", "64,64,0", "a,b,c", "1,2,3,4"):
        with pytest.raises(argparse.ArgumentTypeError, match="H,W,C"):
            profile.input_shape_arg(text)


def test_json_record_of_a_configuration_at_another_input(tmp_path, monkeypatch, capsys):
    path = tmp_path / "profile.json"
    argv = [
        "profile_step.py",
        "BaselineCNN/matched",
        "--batch",
        "2",
        "--input-shape",
        "24,24,3",
        "--classes",
        "4",
        "--steps",
        "1",
        "--warmup",
        "1",
        "--timed",
        "1",
        "--top",
        "3",
        "--json",
        str(path),
    ]
    monkeypatch.setattr(sys, "argv", argv)
    profile.main()
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["input_shape"] == [24, 24, 3] and record["batch"] == 2
    assert record["first_step_s"] > 0 and record["step_s"] > 0 and record["op_executions_per_step"] > 0
    assert abs(sum(row["share"] for row in record["op_types"]) - 1) < 1e-3
    assert "first step (tracing included)" in capsys.readouterr().out


def test_run_file_row_is_read_by_the_report(tmp_path, monkeypatch):
    from benchmarks import report

    argv = [
        "profile_step.py",
        "BaselineCNN/matched",
        "--batch",
        "2",
        "--input-shape",
        "24,24,3",
        "--classes",
        "4",
        "--steps",
        "1",
        "--warmup",
        "1",
        "--timed",
        "1",
        "--json",
        str(tmp_path / "profile.json"),
        "--run-file",
        "--results",
        str(tmp_path / "runs"),
        "--host-name",
        "Test host",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    profile.main()
    record = json.loads((tmp_path / "profile.json").read_text(encoding="utf-8"))
    (run,) = report.load_runs(tmp_path / "runs")  # validated: host, date, command, a row of a known target
    (row,) = run["rows"]
    assert run["file"].endswith("-profile-step.json") and run["host"]["name"] == "Test host"
    assert (row["configuration"], row["input"], row["batch"]) == ("BaselineCNN/matched", "24x24x3", 2)
    assert row["step_ms"] == round(1e3 * record["step_s"]) and row["op_types"][0] == [
        record["op_types"][0]["name"],
        record["op_types"][0]["share"],
    ]
    # the CNN's convolutions: forward, input and filter gradients, at 2 flops per multiply-add, dominate its count
    assert row["gflop_per_image"] > 0 and row["graph_ops"] > 0 and row["flops_per_byte"] > 10
    page = report.pages([run])["docs/benchmarks/scaling.md"]
    assert f"| BaselineCNN/matched | 24x24x3 | {row['package']} | {row['step_ms']:,} |" in page


def test_the_machine_line_says_when_onednn_is_off():
    import os
    import subprocess

    from repo_scripts import ROOT

    # TF_ENABLE_ONEDNN_OPTS=0 turns TensorFlow's oneDNN kernels off whatever the CPU; the run files' software line says so.
    code = "from benchmarks import common; print(common.machine_description())"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0"},
    )
    assert done.returncode == 0, done.stderr[-1000:]
    assert "(oneDNN off), Keras" in done.stdout.strip().splitlines()[-1]
