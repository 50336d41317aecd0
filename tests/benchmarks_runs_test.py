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
