"""The first training step of every application, with an earlier package and with this one.

For each application of ``benchmarks/scale.py`` (``--only`` to choose) at ``--size`` (RGB, 10 classes,
batch ``--batch``), fresh processes alternate ``--repeats`` times between the package given by
``--before`` (a folder holding an earlier ``keras_capsules/``, e.g. ``git archive COMMIT keras_capsules``,
put first on that process's ``PYTHONPATH``) and this checkout's. Each process builds and compiles the
model as ``benchmarks/scale.py`` does (Adam, the library's loss for its scores) and measures:

- the first ``train_on_batch`` (tracing included, seconds) and the median of the ``--steps`` after it
  (the step, seconds);
- how many times the training step was traced (its Python body runs only while it is traced): two
  when the optimizer's and metrics' variables are created inside the first trace, one when they exist
  before it.

Writes ``<results>/YYYY-MM-DD-HHMM-<host>-first-step.json`` (rows of target ``"first-step"`` for
``benchmarks/report.py``, whose first-step verdict reads this package's first steps) and, for the
repository's own results folder, regenerates BENCHMARKS.md. Times are only valid on an otherwise idle
machine.

Usage::

    git archive COMMIT keras_capsules | tar -x -C /tmp/before && git rev-parse COMMIT > /tmp/before/COMMIT
    python -m benchmarks first_step --before /tmp/before [--size 64] [--batch 16] [--steps 3] [--repeats 1] [--only FMCapsNet,AgreementGLOM]
"""

import argparse
import datetime
import json
import os
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.common import train_on_batch_seconds  # noqa: E402
from benchmarks.runs import child_row, frozen_package_record, module_command, run_or_child, run_parser, write_run  # noqa: E402
from benchmarks.scale import APPLICATIONS, CLASSES, KNOWN  # noqa: E402

PACKAGES = ("before", "after")
DEFAULTS = dict(before="", only="", size=64, batch=16, steps=3, repeats=1)


def measure(application, size, batch, steps):
    """One process's figures: parameters, training-step traces, first step (s) and the median of ``steps`` after it (s),
    or ``{"status": "refused", "why": ...}`` when the constructor refuses the input."""
    import keras
    import numpy as np

    import keras_capsules
    from benchmarks.applications import _loss_for
    from keras_capsules import applications

    name, overrides = KNOWN[application]
    try:
        model = applications.get_configuration(name).build(
            **{**overrides, "input_shape": (size, size, 3), "classes": CLASSES}
        )
    except ValueError as error:
        return {"status": "refused", "why": str(error).splitlines()[0]}
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=_loss_for(model))
    traces = []
    train_step = model.train_step
    model.train_step = lambda data: traces.append(1) or train_step(data)
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(batch, size, size, 3)).astype("float32")
    y = rng.integers(0, CLASSES, batch)
    times = train_on_batch_seconds(model, x, y, steps)
    return {
        "status": "measured",
        "parameters": model.count_params(),
        "traces": len(traces),
        "first_step_s": times[0],
        "step_s": statistics.median(times[1:]),
        "package_path": os.path.dirname(os.path.dirname(keras_capsules.__file__)),
    }


def run_child(application, package, args):
    command = module_command(
        __spec__.name,
        *("--child", package, "--only", application, "--size", args.size, "--batch", args.batch),
        *("--steps", args.steps),
    )
    env = None
    if package == "before":
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join(filter(None, [os.path.abspath(args.before), os.environ.get("PYTHONPATH")])),
        )
    row = child_row(command, env)
    if "error" in row:
        raise SystemExit(f"first_step: the {package} process of {application} failed: {row['error']}")
    if package == "before" and row["status"] == "measured" and not os.path.samefile(row["package_path"], args.before):
        raise SystemExit(
            f"first_step: the before process imported keras_capsules from {row['package_path']}, not from {args.before}"
        )
    return row


def summary_row(application, args, measured):
    """The run file's row of one application from its processes' figures by package."""
    name, overrides = KNOWN[application]
    row = {
        "target": "first-step",
        "application": application,
        "configuration": name,
        "overrides": overrides,
        "size": args.size,
        "input": f"{args.size}x{args.size}x3",
        "batch": args.batch,
    }
    if any(r["status"] == "refused" for found in measured.values() for r in found):
        return dict(
            row,
            status="refused",
            why=next(r["why"] for found in measured.values() for r in found if r["status"] == "refused"),
        )
    row.update(status="measured", parameters=measured["after"][0]["parameters"])
    for package, found in measured.items():
        row[f"{package}_traces"] = [r["traces"] for r in found]
        row[f"{package}_first_step_s"] = [round(r["first_step_s"], 1) for r in found]
        row[f"{package}_step_s"] = round(statistics.median(r["step_s"] for r in found), 2)
    return row


def run_all(args):
    if not args.before or not os.path.isdir(os.path.join(args.before, "keras_capsules")):
        raise SystemExit(
            f"first_step: argument --before: expected a folder holding an earlier keras_capsules/, received {args.before!r}"
        )
    chosen = args.only.split(",") if args.only else list(APPLICATIONS)
    unknown = [a for a in chosen if a not in KNOWN]
    if unknown:
        raise SystemExit(f"first_step: argument --only: expected names among {list(KNOWN)}, received {unknown}")
    started = datetime.datetime.now(datetime.timezone.utc)
    found = {a: {p: [] for p in PACKAGES} for a in chosen}
    for _ in range(args.repeats):
        for application in chosen:
            for package in PACKAGES:
                found[application][package].append(run_child(application, package, args))
                print(
                    f"{application} {package}: {json.dumps(found[application][package][-1])}",
                    file=sys.stderr,
                    flush=True,
                )
    ended = datetime.datetime.now(datetime.timezone.utc)
    rows = [summary_row(application, args, measured) for application, measured in found.items()]
    measured = (
        f"train_on_batch at batch {args.batch}: the first step (tracing included) and the median of {args.steps} after it, and the training step's "
        f"traces, the package before (first on PYTHONPATH) and this one, fresh processes alternating over {args.repeats} repeat(s)"
    )
    return write_run(
        "first_step", args, (started, ended), measured, rows, "first-step", before=frozen_package_record(args.before)
    )


def main(argv=None):
    parser = run_parser(__doc__, DEFAULTS)
    parser.add_argument("--child", choices=PACKAGES, default=None, help=argparse.SUPPRESS)
    return run_or_child(
        parser.parse_args(argv), lambda args: measure(args.only, args.size, args.batch, args.steps), run_all
    )


if __name__ == "__main__":
    main()
