"""Writes a benchmark's rows as a run file through the one writer and renders it, for the tests of each workload."""

import datetime
import json
import os
import types

from benchmarks import report
from benchmarks.runs import write_run


def written_and_rendered(folder, workload, kind, rows, page):
    """``(record, text)``: ``rows`` written as ``workload``'s run file of ``kind`` in ``folder``
    (:func:`benchmarks.runs.write_run`, on a test host), validated, and the ``page`` it renders on."""
    args = types.SimpleNamespace(results=str(folder), host_name="test host")
    span = (datetime.datetime(2026, 12, 4, 9, 0), datetime.datetime(2026, 12, 4, 9, 20))
    path = write_run(workload, args, span, "steps", rows, kind)
    record = json.loads(open(path).read())
    name = os.path.basename(path)
    report.validate_run(record, name)
    assert name.endswith(f"-{kind}.json") and record["source"] == f"benchmarks/{workload}.py"
    return record, report.pages([dict(record, file=name)])[page]
