"""``benchmarks.runs.write_run``: the run file's name, and two runs started in the same minute kept apart."""

import datetime
import json
import types

from benchmarks import runs


def test_runs_started_in_the_same_minute_get_a_file_each(tmp_path):
    args = types.SimpleNamespace(results=str(tmp_path), host_name="Test host")
    started = datetime.datetime(2026, 12, 4, 6, 14, 5, tzinfo=datetime.timezone.utc)
    span = (started, started + datetime.timedelta(seconds=30))
    paths = [
        runs.write_run("profile_step", args, span, "measured", [{"configuration": name}], "profile-step")
        for name in ("first", "second", "third")
    ]
    assert len(set(paths)) == 3, paths
    assert [p.rsplit("/", 1)[1].split("-profile-step")[1] for p in paths] == [".json", "-2.json", "-3.json"]
    assert all(p.rsplit("/", 1)[1].startswith("2026-12-04-0614-") for p in paths)
    assert [json.load(open(p))["rows"][0]["configuration"] for p in paths] == ["first", "second", "third"]


def test_peak_rss_is_the_processs_own_not_its_parents():
    """A child's ``ru_maxrss`` keeps its parent's resident size at the fork across exec; the peak benchmarks
    record is the child's own high-water mark (importing Keras and TensorFlow: about 0.7 GiB)."""
    import subprocess
    import sys

    import numpy as np

    script = "from benchmarks.common import peak_rss_mib; print(peak_rss_mib())"
    parent = np.ones(2 * 2**30 // 8)  # 2 GiB, touched
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=runs.ROOT, check=True)
    assert parent[-1] == 1 and float(done.stdout.split()[-1]) < 1536, done.stdout


def test_alternating_reverses_the_order_every_other_round():
    from benchmarks.runs import alternating

    assert list(alternating(("a", "b"), 3)) == [(0, "a"), (0, "b"), (1, "b"), (1, "a"), (2, "a"), (2, "b")]


def test_recipe_steps_counts_the_steps_after_the_skipped_ones():
    """Six steps of the main job's recipe, two skipped: four timed, each with CPU time and faults counted."""
    from benchmarks.common import recipe_steps

    figures = recipe_steps("EffCapsNet", "mnist_sample", "default", 8, 6, skip=2)
    assert figures["steps"] == 4 and figures["median_step_seconds"] > 0
    assert figures["user_seconds"] + figures["system_seconds"] > 0 and figures["minor_faults"] >= 0
    assert figures["peak_rss_mib"] > 100  # TensorFlow and the model are loaded
