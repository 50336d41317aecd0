"""Prediction by chunks of rows: ``predict_on_batch``'s memory and time, chunked against the whole vote tensor.

At inference ``ConvCaps`` (``remat=True``) routes chunks of output rows within
``keras_capsules.layers.conv_caps.CHUNK_VOTE_BYTES`` per example; with ``remat=False`` it routes the
whole vote tensor at once (what every router but EM across positions did at inference before). For each
``--only`` application (``benchmarks/scale.py``'s configurations) at each ``--sizes`` side (RGB, 10
classes, batch ``--batch``), one fresh process per mode builds the model (``whole``: every ``ConvCaps``
set to ``remat=False`` after building, same weights and arithmetic) and measures:

- the first ``predict_on_batch`` (tracing included, seconds) and the median of ``--steps`` more
  (milliseconds per image);
- the process's peak resident set (``VmHWM``) after building (``build_peak_mb``) and after
  predicting (``peak_mb``), MB;
- the chunks each ``ConvCaps`` layer routes at inference (``chunks``).

Processes alternate between the modes ``--repeats`` times; each figure is the median of its
configuration's processes. Writes ``<results>/YYYY-MM-DD-HHMM-<host>-predict-chunks.json`` (rows of
target ``"predict-chunks"`` for ``benchmarks/report.py``) and, for the repository's own results
folder, regenerates BENCHMARKS.md. Times are only valid on an otherwise idle machine; memory is not
affected by the load.

Usage::

    python -m benchmarks predict_chunks [--sizes 128] [--only ConsensusCapsNet,ConsensusCapsNet-dynamic] [--batch 16]
        [--steps 2] [--repeats 1]
"""

import argparse
import datetime
import json
import os
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.runs import child_row, module_command, run_or_child, run_parser, status_kib, write_run  # noqa: E402
from benchmarks.scale import CLASSES, KNOWN, inference_figures  # noqa: E402

MODES = ("chunks", "whole")
DEFAULTS = dict(only="ConsensusCapsNet,ConsensusCapsNet-dynamic", sizes="128", batch=16, steps=2, repeats=1)


def measure(label, size, batch, steps, mode):
    """One process's figures (see the module docstring)."""
    import numpy as np

    from keras_capsules import applications
    from keras_capsules.layers import ConvCaps

    name, overrides = KNOWN[label]
    model = applications.get_configuration(name).build(
        **{**overrides, "input_shape": (size, size, 3), "classes": CLASSES}
    )
    layers = [layer for layer in model._flatten_layers(include_self=False) if isinstance(layer, ConvCaps)]
    if mode == "whole":
        for layer in layers:
            layer.remat = False
    row = {
        "chunks": [len(layer.row_chunks(False)) for layer in layers],
        "build_peak_mb": status_kib("VmHWM") * 1024 / 1e6,
    }
    x = np.random.default_rng(0).uniform(size=(batch, size, size, 3)).astype("float32")
    row["first_s"], row["infer_ms_per_image"], row["peak_mb"] = inference_figures(model, x, steps)
    return row


def run_child(label, size, mode, args):
    """One configuration and mode in a fresh process; its row, or ``{"error": ...}``."""
    command = module_command(
        __spec__.name,
        *("--child", label, "--size", size, "--mode", mode, "--batch", args.batch, "--steps", args.steps),
    )
    return child_row(command)


def merge(label, size, batch, found):
    """Both modes' processes -> one run-file row: per mode, the medians of the measured figures."""
    name, overrides = KNOWN[label]
    row = {
        "target": "predict-chunks",
        "application": label,
        "configuration": name,
        "overrides": overrides,
        "input": f"{size}x{size}x3",
        "batch": batch,
    }
    for mode in MODES:
        measured = [r for r in found[mode] if "error" not in r]
        if not measured:
            row[f"{mode}_error"] = found[mode][0]["error"]
            continue
        row[f"{mode}_chunks"] = measured[0]["chunks"]
        for key, digits in (("first_s", 1), ("infer_ms_per_image", 1), ("build_peak_mb", 0), ("peak_mb", 0)):
            value = statistics.median(r[key] for r in measured)
            row[f"{mode}_{key}"] = round(value, digits) if digits else round(value)
    return row


def run_all(args):
    labels = args.only.split(",")
    unknown = [label for label in labels if label not in KNOWN]
    if unknown:
        raise SystemExit(
            f"predict_chunks: argument --only: unknown application(s) {unknown}; expected some of {list(KNOWN)}"
        )
    sizes = [int(s) for s in args.sizes.split(",")]
    started = datetime.datetime.now(datetime.timezone.utc)
    found = {(label, size): {mode: [] for mode in MODES} for size in sizes for label in labels}
    for _ in range(args.repeats):
        for (label, size), by_mode in found.items():
            for mode in MODES:
                by_mode[mode].append(run_child(label, size, mode, args))
                print(f"{label} {size}px {mode}: {json.dumps(by_mode[mode][-1])}", file=sys.stderr, flush=True)
    ended = datetime.datetime.now(datetime.timezone.utc)
    measured = (
        f"predict_on_batch at batch {args.batch}: the first call (tracing included) and the median of {args.steps} "
        f"more, peak RSS (VmHWM) after building and after predicting; ConvCaps by chunks of rows (remat=True) "
        f"and whole (remat=False), one process per mode alternating over {args.repeats} repeat(s), medians"
    )
    rows = [merge(label, size, args.batch, by_mode) for (label, size), by_mode in found.items()]
    return write_run("predict_chunks", args, (started, ended), measured, rows, "predict-chunks")


def main(argv=None):
    parser = run_parser(__doc__, DEFAULTS)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=MODES, default=None, help=argparse.SUPPRESS)
    measure_child = lambda args: measure(args.child, args.size, args.batch, args.steps, args.mode)  # noqa: E731
    return run_or_child(parser.parse_args(argv), measure_child, run_all)


if __name__ == "__main__":
    main()
