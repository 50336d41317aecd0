"""Writes ``BENCHMARKS.md`` and the pages of ``docs/benchmarks/`` from the run files under ``benchmarks/results/``.

    python -m benchmarks report           # rewrites them
    python -m benchmarks report --check   # exits 1 if one differs from what the run files give

A run file is ``benchmarks/results/YYYY-MM-DD-<what>.json``, one per run: the host (``id``, ``cpu``,
``cores``, ``name``), ``date``, ``command``, what was ``measured``, its ``source`` and ``rows``, each row
naming the table it belongs to (``"target"``) and holding the figures as measured. Ratios and verdicts
are computed from those figures (:mod:`benchmarks.reporting`: one module per family of tables, the
verdicts, the pages); nothing on the pages is typed by hand. The scripts' own raw output
(``benchmarks/results/<script>.json``) is not read.
"""

import argparse
import json
import re
import sys
from pathlib import Path

from benchmarks.reporting.pages import TABLE_KEYS, pages

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
RUN_FILE = re.compile(r"^\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.json$")
REQUIRED = ("host", "date", "time_utc", "command", "measured", "source", "rows")
HOST_REQUIRED = ("id", "cpu", "cores", "name")


def validate_run(run, name):
    """Raises ``ValueError`` naming the file and the field when a run file lacks what the page needs."""
    for field in REQUIRED:
        if field not in run:
            raise ValueError(f"report: run file {name} has no {field!r} field (required: {', '.join(REQUIRED)})")
    for field in ("command", "measured", "source"):
        if not isinstance(run[field], str) or not run[field].strip():
            raise ValueError(f"report: run file {name}: {field!r} must be a non-empty string, got {run[field]!r}")
    if not isinstance(run["host"], dict) or any(not run["host"].get(f) for f in HOST_REQUIRED):
        raise ValueError(f"report: run file {name}: 'host' must give {', '.join(HOST_REQUIRED)}, got {run['host']!r}")
    if not isinstance(run["host"]["cores"], int) or run["host"]["cores"] < 1:
        raise ValueError(
            f"report: run file {name}: host 'cores' must be a positive integer, got {run['host']['cores']!r}"
        )
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(run["date"])) or not name.startswith(run["date"]):
        raise ValueError(
            f"report: run file {name}: 'date' must be YYYY-MM-DD and start the file name, got {run['date']!r}"
        )
    if not isinstance(run["rows"], list) or not run["rows"]:
        raise ValueError(f"report: run file {name}: 'rows' must be a non-empty list")
    for row in run["rows"]:
        if row.get("target") not in TABLE_KEYS:
            raise ValueError(
                f"report: run file {name}: row target {row.get('target')!r} is none of {sorted(TABLE_KEYS)}"
            )


def load_runs(folder=RESULTS):
    """The run files of ``folder``, validated, oldest first; each gains ``file`` (its name)."""
    runs, hosts = [], {}
    for path in sorted(folder.iterdir()):
        if not RUN_FILE.match(path.name):
            continue
        run = json.loads(path.read_text(encoding="utf-8"))
        validate_run(run, path.name)
        host = run["host"]
        if hosts.setdefault(host["id"], host["name"]) != host["name"]:
            raise ValueError(
                f"report: run file {path.name}: host id {host['id']!r} is named {hosts[host['id']]!r} elsewhere"
            )
        runs.append(dict(run, file=path.name))
    names = list(hosts.values())
    if len(set(names)) != len(names):
        raise ValueError(f"report: two host ids share one name: {names}")
    return runs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if a page differs from what the run files give (default: rewrite the pages)",
    )
    args = parser.parse_args(argv)
    found = pages(load_runs())
    if args.check:
        stale = [
            path
            for path, text in found.items()
            if not (ROOT / path).exists() or (ROOT / path).read_text(encoding="utf-8") != text
        ]
        if stale:
            print(
                f"{', '.join(stale)} differ from `python -m benchmarks report`'s output: regenerate them",
                file=sys.stderr,
            )
            return 1
        return 0
    for path, text in found.items():
        (ROOT / path).parent.mkdir(parents=True, exist_ok=True)
        (ROOT / path).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
