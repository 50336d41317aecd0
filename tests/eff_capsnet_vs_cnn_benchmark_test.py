"""benchmarks/eff_capsnet_vs_cnn.py: the matched CNN, the timings -> the run file's ``effcaps-vs-cnn`` rows, and the
report's table and target read from the run file it writes."""

import datetime
import json
import os

from benchmarks import eff_capsnet_vs_cnn, report
from benchmarks.reporting import registry, verdicts

SPAN = (datetime.datetime(2026, 12, 5, 12, 0), datetime.datetime(2026, 12, 5, 12, 2))
FOUND = [
    ("training step", 16, 0.0402, 0.0350),
    ("training step", 64, 0.1054, 0.1157),
    ("inference", 64, 0.0220, 0.0266),
]
TARGET = next(v for v in registry.VERDICTS if v["rows"] == "effcaps-vs-cnn")


def test_the_cnn_matches_efficient_capsnets_parameter_count():
    # EffCapsNet(reconstruction=True) has 1,573,744 parameters; the closest Dense width gives 1,573,955.
    assert eff_capsnet_vs_cnn.plain_cnn(1_573_744).count_params() == 1_573_955


def test_the_timings_become_rows_in_ms():
    assert eff_capsnet_vs_cnn.rows_of(FOUND) == [
        {"target": "effcaps-vs-cnn", "configuration": "training step, b16", "effcaps_ms": 40.2, "cnn_ms": 35.0},
        {"target": "effcaps-vs-cnn", "configuration": "training step, b64", "effcaps_ms": 105.4, "cnn_ms": 115.7},
        {"target": "effcaps-vs-cnn", "configuration": "inference, b64", "effcaps_ms": 22.0, "cnn_ms": 26.6},
    ]


def test_the_run_file_renders_the_table_and_the_target(tmp_path):
    args = eff_capsnet_vs_cnn.parser().parse_args(["--results", str(tmp_path), "--host-name", "test host"])
    path = eff_capsnet_vs_cnn.write(args, SPAN, FOUND, 1_573_744, 1_573_955)
    name = os.path.basename(path)
    record = json.loads(open(path).read())
    report.validate_run(record, name)
    assert name.startswith("2026-12-05-1200-") and name.endswith("-eff-capsnet-vs-cnn.json")
    assert (record["effcaps_parameters"], record["cnn_parameters"]) == (1_573_744, 1_573_955)
    assert "(1,573,744 parameters)" in record["measured"] and "at batch 16 and 64" in record["measured"]
    run = dict(record, file=name)
    page = report.pages([run])["docs/benchmarks/peers.md"]
    assert "| training step, b16 | 40.2 | 35.0 | 1.15 |\n| training step, b64 | 105.4 | 115.7 | 0.91 |" in page
    assert "| inference, b64 | 22.0 | 26.6 | 0.83 |" in page
    # The target reads the training rows only: 40.2 / 35.0 = 1.15 and 105.4 / 115.7 = 0.91, both within 2.5.
    assert verdicts.verdict_rows(TARGET, [run]) == [("test host", [("", "b16 1.15, b64 0.91", True)], [run])]
    slow = dict(run, rows=eff_capsnet_vs_cnn.rows_of([("training step", 16, 0.090, 0.030)]))
    assert verdicts.verdict_rows(TARGET, [slow]) == [("test host", [("", "b16 3.00", False)], [slow])]
