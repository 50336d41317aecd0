"""Router comparison: forward and training-step time and peak memory per router and iteration count.

Shapes (CapsNet's class-capsule layer and a small convolutional capsule layer): FcCaps 1152 x 8D -> 10 x 16D at batch 64, and ConvCaps 6x6x32 x 8D -> K3 s1 32 x 8D
at batch 16; routing iterations 1..5 (single-pass routers run once). Each (router, shape) runs in its
own process so its peak resident memory can be read; iterations run in increasing order, so the peak
after each iteration count is that configuration's peak (memory grows with iterations). Dynamic routing,
the reference, is always measured, at every shape and count (and at 1 iteration, the single-pass routers').

Scaling curves (``--sweep in_caps`` or ``--sweep out_caps``): the FC shape with the number of input
capsules (144 ... 2304) or output capsules (5 ... 40) varied, 3 iterations for iterative routers.

Writes ``<results>/YYYY-MM-DD-HHMM-<host>-routers.json`` (``-routers-in-caps.json``, ``-routers-out-caps.json``
for a sweep; rows of target ``"routers"`` for ``benchmarks/report.py``: ``shape``, ``router``, ``iterations``,
``forward_ms``, ``train_ms``, ``rss_mib`` and dynamic routing's ``dynamic_forward_ms`` and ``dynamic_train_ms``
at the same shape and iterations, from which the report computes the ratios; dynamic routing has no row of its
own) and, for the repository's own results folder, regenerates BENCHMARKS.md. A (router, shape) whose process
failed is left out of the rows and listed with its error under the run file's ``failed``; so is a row without
dynamic routing's figures at its shape and iterations.

Usage: ``python -m benchmarks routers [--routers dynamic,em] [--shapes fc,conv] [--iterations 1,3,5] [--repeats N] [--sweep in_caps|out_caps]``
"""

import argparse
import datetime
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.runs import child_row, module_command, run_or_child, run_parser, write_run  # noqa: E402

DEFAULTS = dict(routers="", shapes="fc,conv", iterations="1,2,3,4,5", repeats=10)

SHAPES = {
    "fc": {"batch": 64, "input": (1152, 8), "layer": "FcCaps", "out": (10, 16)},
    "conv": {"batch": 16, "input": (6, 6, 32, 8), "layer": "ConvCaps", "out": (32, 8)},
}
SWEEPS = {
    "in_caps": {
        f"fc_in{n}": {"batch": 64, "input": (n, 8), "layer": "FcCaps", "out": (10, 16)} for n in (144, 576, 1152, 2304)
    },
    "out_caps": {
        f"fc_out{n}": {"batch": 64, "input": (1152, 8), "layer": "FcCaps", "out": (n, 16)} for n in (5, 10, 20, 40)
    },
}
#: What each sweep varies, for the run file's ``measured``.
SWEEP_TEXT = {
    "in_caps": "with 144, 576, 1152 or 2304 input capsules (shape fc_in<N>)",
    "out_caps": "with 5, 10, 20 or 40 output capsules (shape fc_out<N>)",
}
for _sweep in SWEEPS.values():
    SHAPES.update(_sweep)


def measure(router, shape_name, iterations, repeats):
    """Runs inside the child process: returns one row per iteration count."""
    import statistics
    import time

    import keras
    import numpy as np
    import tensorflow as tf

    from benchmarks.common import peak_rss_mib
    from keras_capsules import layers, routing

    shape = SHAPES[shape_name]
    iterative = routing.get(router).iterative
    rng = np.random.default_rng(0)
    poses = tf.constant(rng.normal(size=(shape["batch"],) + shape["input"]).astype("float32") * 0.1)
    activations = tf.constant(rng.uniform(size=(shape["batch"],) + shape["input"][:-1]).astype("float32"))
    rows = []
    for count in iterations if iterative else [1]:
        kwargs = {"router": router, "routing_iterations": count if iterative else None}
        if shape["layer"] == "FcCaps":
            layer = layers.FcCaps(*shape["out"], **kwargs)
        else:
            layer = layers.ConvCaps(*shape["out"], kernel_size=3, strides=1, **kwargs)
        layer((poses, activations))

        @tf.function
        def forward():
            return layer((poses, activations), training=False)[0]

        @tf.function
        def train_step():
            with tf.GradientTape() as tape:
                out_poses, out_acts = layer((poses, activations), training=True)
                loss = tf.reduce_mean(tf.square(out_poses)) + tf.reduce_mean(tf.square(out_acts))
            return [g for g in tape.gradient(loss, layer.trainable_weights) if g is not None]

        def timed(fn):
            fn()
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                keras.tree.map_structure(lambda t: t.numpy(), fn())
                times.append(time.perf_counter() - start)
            return 1e3 * statistics.median(times)

        rows.append(
            {
                "router": router,
                "shape": shape_name,
                "iterations": count,
                "forward_ms": timed(forward),
                "train_step_ms": timed(train_step),
                "peak_rss_mib": peak_rss_mib(),
            }
        )
    return rows


def rows_of(measured):
    """Every child's rows (``router``, ``shape``, ``iterations``, ``forward_ms``, ``train_step_ms``, ``peak_rss_mib``)
    -> the run file's ``routers`` rows: each router but dynamic routing, with dynamic routing's figures at the same
    shape and iterations (left out where there are none); ms to one decimal, MiB to integers."""
    dynamic = {(r["shape"], r["iterations"]): r for r in measured if r["router"] == "dynamic"}
    return [
        {
            "target": "routers",
            "shape": r["shape"],
            "router": r["router"],
            "iterations": r["iterations"],
            "forward_ms": round(r["forward_ms"], 1),
            "train_ms": round(r["train_step_ms"], 1),
            "dynamic_forward_ms": round(dynamic[r["shape"], r["iterations"]]["forward_ms"], 1),
            "dynamic_train_ms": round(dynamic[r["shape"], r["iterations"]]["train_step_ms"], 1),
            "rss_mib": round(r["peak_rss_mib"]),
        }
        for r in measured
        if r["router"] != "dynamic" and (r["shape"], r["iterations"]) in dynamic
    ]


def write(args, span, found):
    """The run file of ``found`` (``{(router, shape): its child's {"rows": [...]} or {"error": ...}}``, :func:`rows_of`;
    the failures, and the rows without dynamic routing's figures, as ``failed``); its path. Exits without one
    when no row is left."""
    measured = [r for result in found.values() for r in result.get("rows", [])]
    rows = rows_of(measured)
    failed = {f"{router}:{shape}": result["error"] for (router, shape), result in found.items() if "error" in result}
    kept = {(r["router"], r["shape"], r["iterations"]) for r in rows}
    for r in measured:
        if r["router"] != "dynamic" and (r["router"], r["shape"], r["iterations"]) not in kept:
            failed[f"{r['router']}:{r['shape']}:{r['iterations']}"] = "no dynamic routing at this shape and iterations"
    for what, why in failed.items():
        print(f"left out {what}: {why}", file=sys.stderr, flush=True)
    if not rows:
        raise SystemExit(f"routers: no row to write, no run file written: {failed}")
    shapes = (
        f"FcCaps 1152 x 8D -> 10 x 16D at b64 {SWEEP_TEXT[args.sweep]}"
        if args.sweep
        else "fc: FcCaps 1152 x 8D -> 10 x 16D at b64, conv: ConvCaps 6x6x32 x 8D -> K3 s1 32 x 8D at b16"
    )
    measured_text = (
        f"one capsule layer per router under tf.function: the forward pass and a training step (gradients of a squared "
        f"loss), each the median of {args.repeats} calls after one that traces; {shapes}; routing iterations "
        f"{'3' if args.sweep else args.iterations} (single-pass routers: 1); each (router, shape) in its own process, "
        "its iteration counts in increasing order, peak RSS of that process after each; dynamic routing in its own "
        "process at the same shapes and counts, each row carrying its figures"
    )
    kind = f"routers-{args.sweep.replace('_', '-')}" if args.sweep else "routers"
    return write_run("routers", args, span, measured_text, rows, kind, failed=failed)


def run_all(args):
    from keras_capsules import routing

    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    routers = ["dynamic"] + [
        r for r in (args.routers.split(",") if args.routers else routing.available()) if r != "dynamic"
    ]
    shapes = list(SWEEPS[args.sweep]) if args.sweep else args.shapes.split(",")
    counts = [3] if args.sweep else [int(i) for i in args.iterations.split(",")]
    found = {}
    for shape in shapes:
        for router in routers:
            iterations = sorted({1, *counts}) if router == "dynamic" else counts
            arguments = ("--child", f"{router}:{shape}", "--iterations", ",".join(map(str, iterations)))
            found[router, shape] = child_row(module_command(__spec__.name, *arguments, "--repeats", args.repeats))
            print(f"{router} {shape}: {json.dumps(found[router, shape])}", file=sys.stderr, flush=True)
    ended = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return write(args, (started, ended), found)


def parser():
    parser = run_parser(__doc__, DEFAULTS)
    parser.add_argument(
        "--sweep", choices=sorted(SWEEPS), default=None, help="scaling curve instead of the fixed shapes"
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    return parser


def measure_child(args):
    router, shape = args.child.split(":")
    return {"rows": measure(router, shape, [int(i) for i in args.iterations.split(",")], args.repeats)}


def main(argv=None):
    return run_or_child(parser().parse_args(argv), measure_child, run_all)


if __name__ == "__main__":
    main()
