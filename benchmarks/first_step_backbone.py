"""The first training step of an application against that of its convolutional backbone alone.

Tells a first step's tracing that the capsules cost from the one any CNN of the backbone's depth costs.
For ``--application`` (``benchmarks/scale.py``'s configurations) at ``--size`` (RGB, 10 classes, batch
``--batch``), fresh processes alternate ``--repeats`` times between two models, each compiled as
``benchmarks/scale.py`` compiles (Adam; the library's loss for the application, sparse cross-entropy on
logits for the backbone):

- ``whole``: the application;
- ``backbone``: the application's layers up to ``--cut`` (its backbone's last layer), then global
  average pooling and a dense layer of 10 logits: the same convolutions without the capsules.

Each process measures the first ``train_on_batch`` (tracing included, seconds), the next one (the step,
seconds) and counts the model's layers. Writes ``<results>/YYYY-MM-DD-HHMM-<host>-first-step-backbone.json``
(rows of target ``"first-step-backbone"`` for ``benchmarks/report.py``) and, for the repository's own
results folder, regenerates BENCHMARKS.md. Times are only valid on an otherwise idle machine.

Usage::

    python -m benchmarks first_step_backbone [--application FMCapsNet --cut final_relu] [--size 64] [--batch 16] [--repeats 2]
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.runs import child_row, module_command, run_or_child, run_parser, write_run  # noqa: E402
from benchmarks.scale import CLASSES, KNOWN  # noqa: E402

MODELS = ("backbone", "whole")
DEFAULTS = dict(application="FMCapsNet", cut="final_relu", size=64, batch=16, repeats=2)


def build(application, cut, size, which):
    """``(model, loss)``: the application, or its layers up to ``cut`` with a pooled dense head."""
    import keras

    from benchmarks.applications import _loss_for
    from keras_capsules import applications

    name, overrides = KNOWN[application]
    model = applications.get_configuration(name).build(
        **{**overrides, "input_shape": (size, size, 3), "classes": CLASSES}
    )
    if which == "whole":
        return model, _loss_for(model)
    features = keras.layers.GlobalAveragePooling2D()(model.get_layer(cut).output)
    backbone = keras.Model(model.inputs, keras.layers.Dense(CLASSES)(features))
    return backbone, keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def measure(application, cut, size, batch, which):
    """One process's figures: layers, first step (s) and the step after it (s)."""
    import keras
    import numpy as np

    model, loss = build(application, cut, size, which)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=loss)
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(batch, size, size, 3)).astype("float32")
    y = rng.integers(0, CLASSES, batch)
    times = []
    for _ in range(2):
        start = time.perf_counter()
        model.train_on_batch(x, y)
        times.append(time.perf_counter() - start)
    return {"layers": len(model.layers), "first_step_s": times[0], "step_s": times[1]}


def run_child(which, args):
    command = module_command(
        __spec__.name,
        *("--child", which, "--application", args.application, "--cut", args.cut),
        *("--size", args.size, "--batch", args.batch),
    )
    row = child_row(command)
    if "error" in row:
        raise SystemExit(f"first_step_backbone: the {which} process failed: {row['error']}")
    return row


def run_all(args):
    if args.application not in KNOWN:
        raise SystemExit(
            f"first_step_backbone: argument --application: expected one of {list(KNOWN)}, received {args.application!r}"
        )
    started = datetime.datetime.now(datetime.timezone.utc)
    found = {which: [] for which in MODELS}
    for _ in range(args.repeats):
        for which in MODELS:
            found[which].append(run_child(which, args))
            print(f"{which}: {json.dumps(found[which][-1])}", file=sys.stderr, flush=True)
    ended = datetime.datetime.now(datetime.timezone.utc)
    name, overrides = KNOWN[args.application]
    rows = []
    for which, measured in found.items():
        rows.append(
            {
                "target": "first-step-backbone",
                "application": args.application,
                "configuration": name,
                "overrides": overrides,
                "model": which,
                "cut": args.cut,
                "input": f"{args.size}x{args.size}x3",
                "batch": args.batch,
                "layers": measured[0]["layers"],
                "processes": len(measured),
                "first_step_s": [round(r["first_step_s"], 1) for r in measured],
                "step_s": round(statistics.median(r["step_s"] for r in measured), 2),
            }
        )
    measured = (
        f"train_on_batch at batch {args.batch}: the first step (tracing included) and the next, the application against "
        f"its layers up to {args.cut!r} with a pooled dense head, fresh processes alternating over {args.repeats} repeat(s)"
    )
    return write_run("first_step_backbone", args, (started, ended), measured, rows, "first-step-backbone")


def main(argv=None):
    parser = run_parser(__doc__, DEFAULTS)
    parser.add_argument("--child", choices=MODELS, default=None, help=argparse.SUPPRESS)
    measure_child = lambda args: measure(args.application, args.cut, args.size, args.batch, args.child)  # noqa: E731
    return run_or_child(parser.parse_args(argv), measure_child, run_all)


if __name__ == "__main__":
    main()
