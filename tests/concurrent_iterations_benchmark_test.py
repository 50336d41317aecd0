"""benchmarks/concurrent_iterations.py: each setting's processes -> the run file's ``idpa-iterations`` rows, checked
against figures worked out by hand, and the report's table read from the run file it writes."""

import datetime
import json
import os

from benchmarks import concurrent_iterations, report

SPAN = (datetime.datetime(2026, 12, 5, 10, 0), datetime.datetime(2026, 12, 5, 10, 40))
FAILED = {"error": "MemoryError: Unable to allocate 2.1 GiB"}
FOUND = {
    1: [{"iterations": 1, "seconds": s} for s in (0.200, 0.210, 0.205)],
    2: [{"iterations": 2, "seconds": 0.220}, FAILED, {"iterations": 2, "seconds": 0.230}],
    3: [FAILED, FAILED, FAILED],
    4: [{"iterations": 4, "seconds": s} for s in (3.3, 3.2, 3.25)],
    5: [{"iterations": 5, "seconds": 5.5}],
}


def test_medians_over_the_processes_that_ran_and_increments():
    assert concurrent_iterations.rows_of(FOUND) == [
        {"target": "idpa-iterations", "iterations": 1, "ours_ms": 205, "increment_ms": None},
        # The failed round is left out: the median of 220 and 230 ms.
        {"target": "idpa-iterations", "iterations": 2, "ours_ms": 225, "increment_ms": 20},
        # No process ran: no step, and no increment here or at the next setting.
        {
            "target": "idpa-iterations",
            "iterations": 3,
            "ours_ms": None,
            "increment_ms": None,
            "error": "MemoryError: Unable to allocate 2.1 GiB",
        },
        {"target": "idpa-iterations", "iterations": 4, "ours_ms": 3250, "increment_ms": None},
        {"target": "idpa-iterations", "iterations": 5, "ours_ms": 5500, "increment_ms": 2250},
    ]


def test_the_run_file_renders_the_table(tmp_path):
    args = concurrent_iterations.parser().parse_args(["--results", str(tmp_path), "--host-name", "test host"])
    path = concurrent_iterations.write(args, SPAN, FOUND)
    name = os.path.basename(path)
    record = json.loads(open(path).read())
    report.validate_run(record, name)
    assert name.startswith("2026-12-05-1000-") and name.endswith("-concurrent-iterations.json")
    assert record["time_utc"] == "10:00-10:40" and record["source"] == "benchmarks/concurrent_iterations.py"
    assert "batch 32 and 1, 2, 3, 4, 5 routing iterations" in record["measured"]
    assert "over 3 round(s)" in record["measured"] and record["host"]["name"] == "test host"
    page = report.pages([dict(record, file=name)])["docs/benchmarks/peers.md"]
    table = "| iterations | ours (ms) | increment (ms) |\n|---:|---:|---:|\n"
    table += "| 1 | 205 | — |\n| 2 | 225 | 20 |\n| 3 | — | — |\n| 4 | 3,250 | — |\n| 5 | 5,500 | 2,250 |\n"
    assert table in page
