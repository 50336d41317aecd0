"""How a benchmark runs and what it records: its child processes, the host and package it measured, the run file.

A benchmark that measures in fresh processes runs itself as a child (:func:`module_command`, :func:`child_env`,
:func:`child_row`): the child prints its figures as one ``ROW {json}`` line (:func:`print_row`) and the parent
reads the last one (:func:`printed_rows`). The parent then writes one run file (:func:`write_run`) in the format
``benchmarks/report.py`` renders: the host (:func:`host_record`), the package measured (:func:`package_record`),
the command, what was measured and the rows.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys

#: The benchmarks package's folder, where children run, and the repository root above it.
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def module_command(module, *arguments):
    """The command that runs ``python -m <module> <arguments>``: a benchmark's own module (``__spec__.name``)
    as a child process; run it with ``cwd=HERE`` and :func:`child_env`."""
    return [sys.executable, "-m", module, *(str(a) for a in arguments)]


def child_env(env=None):
    """``env`` (this process's when ``None``) with the repository root last on ``PYTHONPATH``: a child started
    in :data:`HERE` finds the ``benchmarks`` package there, and a ``keras_capsules`` put first on
    ``PYTHONPATH`` (an earlier package, ``--before``) ahead of the repository's own."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), ROOT) if p)
    return env


def print_row(row):
    """A child process's result, for its parent (:func:`child_row`, :func:`printed_rows`)."""
    print("ROW " + json.dumps(row), flush=True)


def printed_rows(lines):
    """The rows a child printed with :func:`print_row`, in order, from its output lines."""
    return [json.loads(line[4:]) for line in lines if line.startswith("ROW ")]


def status_kib(field, pid="self"):
    """``field`` (``VmHWM``, ``VmRSS``) of ``/proc/<pid>/status`` in KiB; ``None`` once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def run_or_child(args, measure_child, run_all):
    """A benchmark's entry point once its arguments are parsed: in a child process (``args.child``) it
    prints ``measure_child(args)`` for the parent (:func:`print_row`), otherwise it runs ``run_all(args)``."""
    if args.child:
        print_row(measure_child(args))
        return None
    return run_all(args)


def child_row(command, env=None):
    """Runs ``command`` (a benchmark's child process, :func:`module_command`, in :data:`HERE` with
    :func:`child_env` of ``env``) to its end: the last row it printed, or ``{"error": ...}`` with the last line of its
    standard error."""
    done = subprocess.run(command, capture_output=True, text=True, cwd=HERE, env=child_env(env))
    rows = printed_rows(done.stdout.splitlines())
    return (
        rows[-1]
        if rows
        else {"error": (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1][:300]}
    )


def alternating(settings, rounds):
    """``(round, setting)`` for ``rounds`` rounds of every setting, the order reversed every other round (an
    A/B measured in alternating processes: a drift of the host weighs on every setting alike)."""
    for round_index in range(rounds):
        for setting in settings if round_index % 2 == 0 else tuple(reversed(settings)):
            yield round_index, setting


def utc_now():
    """The current UTC time, naive (as run files' spans hold it)."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def host_record(name=None):
    """The run file's host and its software line: the CPU (:func:`benchmarks.common.cpu`) and core count,
    named after them and the date unless ``name`` is given; every run file's host comes from here."""
    from benchmarks.common import cpu as cpu_name
    from benchmarks.common import machine_description

    cpu = cpu_name()
    cores, today = os.cpu_count() or 1, datetime.date.today().isoformat()
    name = name or f"{cpu}, {cores} vCPUs ({today})"
    return {
        "id": re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"),
        "cpu": cpu,
        "cores": cores,
        "name": name,
    }, machine_description()


def frozen_package_record(folder):
    """A folder holding a frozen ``keras_capsules/``: its path, and its commit where a ``COMMIT`` file beside the
    package names it."""
    record = {"path": os.path.abspath(folder)}
    marker = os.path.join(folder, "COMMIT")
    if os.path.exists(marker):
        with open(marker) as handle:
            record["commit"] = handle.read().strip()
    return record


def package_record():
    """The keras_capsules this run measures (the one a child process imports): its folder and commit.

    A frozen copy (``git archive COMMIT keras_capsules`` on ``PYTHONPATH``) names its commit in a
    ``COMMIT`` file beside the package; the repository's own package is its ``HEAD``, ``+changes`` when
    ``keras_capsules/`` differs from it.
    """
    import importlib.machinery
    import importlib.util

    # A child starts in HERE with PYTHONPATH first (child_env): look there before this process's own path,
    # whose first entry (the folder it was started in, under ``python -m``) a child does not have.
    first = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    spec = importlib.machinery.PathFinder.find_spec("keras_capsules", first) if first else None
    spec = spec or importlib.util.find_spec("keras_capsules")
    folder = os.path.dirname(os.path.dirname(spec.origin))
    frozen = frozen_package_record(folder)
    if "commit" in frozen:
        return frozen

    def git(*arguments):
        return subprocess.run(["git", "-C", folder, *arguments], capture_output=True, text=True).stdout.strip()

    dirty = git("status", "--porcelain", "--", "keras_capsules")
    return {"path": folder, "commit": (git("rev-parse", "HEAD") or "unknown") + ("+changes" if dirty else "")}


def run_parser(doc, defaults):
    """The argument parser of a benchmark that writes a run file: ``--KEY`` for each ``defaults`` entry
    (of its default's type), ``--results`` and ``--host-name`` (read by :func:`write_run`)."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    for key, value in defaults.items():
        parser.add_argument(f"--{key}", type=type(value), default=value, help=f"default {value}")
    parser.add_argument("--results", default=os.path.join(HERE, "results"), help="folder of the run file")
    parser.add_argument(
        "--host-name", default=None, help="the host's name in the run file (default: CPU, cores and date)"
    )
    return parser


def write_run(workload, args, span, measured, rows, kind, accelerator=None, software=None, **fields):
    """Writes the run file ``<args.results>/YYYY-MM-DD-HHMM-<host>-<kind>.json`` of the benchmark ``workload``
    (``benchmarks/<workload>.py``, run as ``python -m benchmarks <workload>``)
    (the format of ``benchmarks/report.py``: host, date, span ``(started, ended)`` in UTC, software,
    command, ``measured``, package, ``fields``, ``rows``) and, for the repository's own results folder,
    regenerates BENCHMARKS.md; returns its path. ``accelerator``: the device measured (e.g. ``"NVIDIA H200"``),
    recorded as the host's processor in place of the CPU; ``software``: the software line where it is not this
    process's (a run written from another machine's records)."""
    started, ended = span
    host, this_software = host_record(args.host_name)
    software = software or this_software
    if accelerator:
        host["cpu"] = accelerator
    run = {
        "host": host,
        "date": started.date().isoformat(),
        "time_utc": f"{started:%H:%M}-{ended:%H:%M}",
        "software": software,
        "command": f"python -m benchmarks {workload} " + " ".join(sys.argv[1:]),
        "measured": measured,
        "source": f"benchmarks/{workload}.py",
        "package": package_record(),
        **fields,
        "rows": rows,
    }
    os.makedirs(args.results, exist_ok=True)
    slug = re.sub(r"[^a-z0-9]+", "-", host["cpu"].lower()).strip("-")[:24] or "host"
    stem = os.path.join(args.results, f"{run['date']}-{started:%H%M}-{slug}-{kind}")
    path, copy = f"{stem}.json", 1
    while os.path.exists(path):  # another run of the same kind started in the same minute: never overwrite it
        copy += 1
        path = f"{stem}-{copy}.json"
    with open(path, "w") as handle:
        json.dump(run, handle, indent=2)
    print(path)
    if os.path.samefile(args.results, os.path.join(HERE, "results")):
        from benchmarks import report

        report.main([])
    return path
