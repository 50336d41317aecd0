"""Training step per Keras backend: ``train_on_batch`` of EffCapsNet and CapsNet on TensorFlow, JAX and PyTorch.

For each ``--only`` application (its default configuration and input, 10 classes, batch ``--batch``,
Adam and the margin loss), one fresh process per backend (``KERAS_BACKEND``), the backends alternating,
measures the first ``train_on_batch`` (tracing included, seconds) and the median of ``--steps`` more
(milliseconds), with ``compile``'s defaults on each backend (``jit_compile="auto"``: XLA on JAX and on
TensorFlow where every layer allows it, eager PyTorch; each row records whether XLA was on). The parent
records the load average before and after, and ``--note`` says what else ran on the machine.

Writes ``<results>/YYYY-MM-DD-HHMM-<host>-backends.json`` (rows of target ``"backends"`` for
``benchmarks/report.py``) and, for the repository's own results folder, regenerates BENCHMARKS.md.

Usage::

    python -m benchmarks backends [--only EffCapsNet,CapsNet] [--batch 16] [--steps 10] [--repeats 1] [--note "..."]
"""

import argparse
import datetime
import json
import os
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.common import train_on_batch_seconds  # noqa: E402
from benchmarks.runs import child_row, module_command, run_or_child, run_parser, write_run  # noqa: E402

BACKENDS = ("tensorflow", "jax", "torch")
DEFAULTS = dict(only="EffCapsNet,CapsNet", batch=16, steps=10, repeats=1, note="")


def measure(application, batch, steps):
    """One process's figures on its backend: versions, first step (s), median of ``steps`` more (ms)."""
    import importlib

    import keras
    import numpy as np

    from keras_capsules import applications, losses

    backend = keras.backend.backend()
    model = getattr(applications, application)()
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=losses.MarginLoss())
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(batch,) + tuple(model.inputs[0].shape[1:])).astype("float32")
    y = rng.integers(0, model.outputs[0].shape[-1], batch)
    times = train_on_batch_seconds(model, x, y, steps)
    return {
        "backend": backend,
        "version": importlib.import_module(backend).__version__,
        "input": "x".join(str(d) for d in model.inputs[0].shape[1:]),
        "parameters": model.count_params(),
        "xla": bool(model.jit_compile),
        "first_s": times[0],
        "step_ms": 1e3 * statistics.median(times[1:]),
    }


def run_child(application, backend, args):
    """One application on one backend in a fresh process; its row, or ``{"error": ...}``."""
    command = module_command(__spec__.name, "--child", application, "--batch", args.batch, "--steps", args.steps)
    return child_row(command, env=dict(os.environ, KERAS_BACKEND=backend))


def merge(application, batch, found):
    """Every backend's processes -> one run-file row: per backend, the medians of the measured figures."""
    row = {"target": "backends", "application": application, "batch": batch}
    for backend in BACKENDS:
        measured = [r for r in found[backend] if "error" not in r]
        if not measured:
            row[f"{backend}_error"] = found[backend][0]["error"]
            continue
        row["input"], row["parameters"] = measured[0]["input"], measured[0]["parameters"]
        row[f"{backend}_version"], row[f"{backend}_xla"] = measured[0]["version"], measured[0]["xla"]
        row[f"{backend}_first_s"] = round(statistics.median(r["first_s"] for r in measured), 1)
        row[f"{backend}_step_ms"] = round(statistics.median(r["step_ms"] for r in measured), 1)
    return row


def load_average():
    with open("/proc/loadavg") as handle:
        return " ".join(handle.read().split()[:3])


def run_all(args):
    applications = args.only.split(",")
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = load_average()
    found = {application: {backend: [] for backend in BACKENDS} for application in applications}
    for _ in range(args.repeats):
        for application, by_backend in found.items():
            for backend in BACKENDS:
                by_backend[backend].append(run_child(application, backend, args))
                print(f"{application} {backend}: {json.dumps(by_backend[backend][-1])}", file=sys.stderr, flush=True)
    ended = datetime.datetime.now(datetime.timezone.utc)
    measured = (
        f"train_on_batch at batch {args.batch}, default input and configuration, Adam and the margin loss: the first "
        f"step (tracing included) and the median of {args.steps} more, one process per backend (TensorFlow, JAX, "
        f"PyTorch) alternating over {args.repeats} repeat(s), medians; load average {load_before} before and "
        f"{load_average()} after" + (f"; {args.note}" if args.note else "")
    )
    rows = [merge(application, args.batch, by_backend) for application, by_backend in found.items()]
    return write_run("backends", args, (started, ended), measured, rows, "backends")


def main(argv=None):
    parser = run_parser(__doc__, DEFAULTS)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    measure_child = lambda args: measure(args.child, args.batch, args.steps)  # noqa: E731
    return run_or_child(parser.parse_args(argv), measure_child, run_all)


if __name__ == "__main__":
    main()
