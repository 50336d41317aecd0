"""benchmarks/onednn_main_job.py: each setting's processes as the run file's rows (medians and their ratio
worked out by hand), written by the one writer and rendered on the checks page."""

import datetime
import json
import os
import types

from benchmarks import onednn_main_job, report
from benchmarks.runs import write_run

MEDIANS = {"on": [0.0312, 0.0300, 0.0320], "off": [0.0450, 0.0440]}


def test_rows_hold_each_settings_median_and_off_over_on():
    on, off = onednn_main_job.rows_of(MEDIANS)
    # on: the median of 31.2, 30.0, 32.0 ms is 31.2; off: of 45.0 and 44.0, 44.5; 44.5 / 31.2 = 1.43.
    assert (on["median_ms"], on["process_ms"]) == (31.2, [31.2, 30.0, 32.0]) and "off_over_on" not in on
    assert (off["median_ms"], off["process_ms"], off["off_over_on"]) == (44.5, [45.0, 44.0], 1.43)
    assert {on["target"], off["target"]} == {"onednn-main-job"}


def test_the_run_file_validates_and_renders(tmp_path):
    args = types.SimpleNamespace(results=str(tmp_path), host_name="test host")
    span = (datetime.datetime(2026, 12, 4, 9, 0), datetime.datetime(2026, 12, 4, 9, 20))
    path = write_run("onednn_main_job", args, span, "steps", onednn_main_job.rows_of(MEDIANS), "onednn-main-job")
    record = json.loads(open(path).read())
    name = os.path.basename(path)
    report.validate_run(record, name)
    assert name.endswith("-onednn-main-job.json") and record["source"] == "benchmarks/onednn_main_job.py"
    page = report.pages([dict(record, file=name)])["docs/benchmarks/checks.md"]
    assert (
        "| oneDNN off (TF_ENABLE_ONEDNN_OPTS=0, what the CLI sets on TF 2.21) | 44.5 |" in page and "| 1.43 |" in page
    )
