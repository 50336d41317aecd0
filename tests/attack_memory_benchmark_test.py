"""benchmarks/attack_memory.py: a row measured unless its estimate does not fit, the run file, and its table."""

import json
import os

from benchmarks import attack_memory, report

ESTIMATES = {("CapsNet/mnist", "250"): 2_400_000_000, ("ConsensusCapsNet/mnist-kernel", "25"): 30_000_000_000}


def _children(monkeypatch, free=20_000_000_000):
    """Child processes replaced: the estimate from ESTIMATES, a measured peak of 2 GB; the calls kept."""
    calls = []

    def run_child(kind, preset, batch):
        calls.append((kind, preset, batch))
        if kind == "estimate":
            return {"estimate_bytes": ESTIMATES[preset, batch], "planned_8gb": 17}
        return {"measured_bytes": 2_000_000_000}

    monkeypatch.setattr(attack_memory, "run_child", run_child)
    monkeypatch.setattr(attack_memory, "free_memory", lambda: free)
    return calls


def test_a_row_is_measured_only_when_its_estimate_fits_in_the_free_memory_less_the_margin(monkeypatch):
    calls = _children(monkeypatch)
    assert attack_memory.measure_row("CapsNet/mnist", 250) == {
        "target": "attack-memory",
        "preset": "CapsNet/mnist",
        "batch": 250,
        "estimate_bytes": 2_400_000_000,
        "planned_8gb": 17,
        "measured_bytes": 2_000_000_000,
    }
    kernel = attack_memory.measure_row("ConsensusCapsNet/mnist-kernel", 25)
    assert "measured_bytes" not in kernel  # 30 GB estimated, 20 - 3 GB free
    assert kernel["skipped"] == "estimate 30 GB above the 17 GB free less 3 GB"
    assert calls == [
        ("estimate", "CapsNet/mnist", "250"),
        ("measure", "CapsNet/mnist", "250"),
        ("estimate", "ConsensusCapsNet/mnist-kernel", "25"),
    ]


def test_the_run_file_renders_its_table_on_the_memory_page(monkeypatch, tmp_path):
    _children(monkeypatch)
    monkeypatch.setattr(attack_memory, "CHECK", [("CapsNet/mnist", (250,)), ("ConsensusCapsNet/mnist-kernel", (25,))])
    args = attack_memory.parser().parse_args(["--results", str(tmp_path), "--host-name", "test host"])
    path = attack_memory.run_all(args)
    run = json.loads(open(path).read())
    report.validate_run(run, os.path.basename(path))
    assert path.endswith("-attack-memory.json") and run["source"] == "benchmarks/attack_memory.py"
    page = report.pages([dict(run, file=os.path.basename(path))])["docs/benchmarks/memory.md"]
    assert "| CapsNet/mnist | 250 | 2,400 | 2,000 | 1.20 | 17 | |" in page
    assert (
        "| ConsensusCapsNet/mnist-kernel | 25 | 30,000 | — | — | 17 | estimate 30 GB above the 17 GB free less 3 GB |"
        in page
    )
