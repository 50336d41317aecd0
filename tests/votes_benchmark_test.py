"""benchmarks/votes.py: the timings of one small vote layer, the timings -> the run file's ``votes`` rows, and the
report's table read from the run file it writes."""

import datetime
import json
import os

import tensorflow as tf

from benchmarks import report, votes
from keras_capsules.layers import VectorVotes

SPAN = (datetime.datetime(2026, 12, 5, 8, 0), datetime.datetime(2026, 12, 5, 8, 3))
CASE = "CapsNet class capsules: 1152 x 8D -> 10 x 16D, batch 64"
FOUND = [(CASE, (0.01234, 0.04567), (0.02468, 0.06861))]


def test_a_small_layer_is_timed_forward_and_backward():
    layer = VectorVotes(3, 4)
    layer.build((2, 5, 6))
    poses = tf.ones((2, 5, 6))
    forward, both = votes._timings(layer, poses, layer.kernel.value, 2)
    assert 0 < forward and 0 < both


def test_the_timings_become_rows_in_ms():
    assert votes.rows_of(FOUND) == [
        {
            "target": "votes",
            "case": CASE,
            "layer_forward_ms": 12.3,
            "einsum_forward_ms": 24.7,
            "layer_gradients_ms": 45.7,
            "einsum_gradients_ms": 68.6,
        }
    ]


def test_the_run_file_renders_the_table(tmp_path):
    args = votes.parser().parse_args(["--results", str(tmp_path), "--host-name", "test host", "--repeats", "5"])
    path = votes.write(args, SPAN, FOUND)
    name = os.path.basename(path)
    record = json.loads(open(path).read())
    report.validate_run(record, name)
    assert name.startswith("2026-12-05-0800-") and name.endswith("-votes.json")
    assert "the median of 5 calls after one that traces" in record["measured"]
    page = report.pages([dict(record, file=name)])["docs/benchmarks/routers.md"]
    # 12.3 / 24.7 = 0.50, 45.7 / 68.6 = 0.67.
    assert "## Vote layers" in page and f"| {CASE} | 12.3 | 24.7 | 0.50 | 45.7 | 68.6 | 0.67 |" in page
