"""Roofline account of the routers: counted work, achieved rate, and what the host can reach at that intensity.

Each case is one router at the shapes an application routes at 64x64x3, batch 16 (a convolutional capsule
layer trains one output row of positions at a time, so its case is one row; the class layer is whole), run
forward and backward alone: loss ``sum(poses**2) + sum(activations)``, gradients with respect to the votes,
the activations and the router's weights, ``training=True``. For each case:

- counted work: XLA's own cost analysis of that computation under JAX (``jax.jit(f).lower(...).compile()
  .cost_analysis()``: flops, transcendentals, bytes accessed), beside the library's graph counter on the
  TensorFlow graph (``op_counts.op_costs``: flops and transcendentals of the plain graph);
- time on TensorFlow with the router's ``jit_compile`` off and on, in one process, alternating, the median of
  ``--repeats`` each; achieved GFLOP/s = XLA's flops / time;
- the host's attainable rate at that arithmetic intensity: ``min(peak, bandwidth * flops / bytes)``, with the
  peak a float32 matrix product's GFLOP/s and the bandwidth a large elementwise pass's GB/s, both measured in
  this run (TensorFlow, every core); share = achieved / attainable.

Every case runs in fresh processes (one TensorFlow, one JAX). Times are valid only on an otherwise idle machine.
Writes the run file ``benchmarks/results/YYYY-MM-DD-HHMM-<host>-roofline.json`` (rows of target ``"roofline"``
for ``benchmarks/report.py``, which regenerates BENCHMARKS.md) and prints a Markdown table.

Usage: ``python -m benchmarks roofline [--only em-matrix-row,...] [--repeats 5] [--host-name NAME]``
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.runs import HERE, child_row, module_command, print_row  # noqa: E402

_LSTM_ROW = {"name": "lstm", "units": 16, "compatibility_units": [32, 32], "activation_units": [64, 64]}
_KERNEL_CLASS = {"name": "kernel", "num_components": 10, "activation": "linear", "activation_prior": False}
#: name -> (what it is, router spec, votes shape (batch, in_caps, out_caps, dim)).
CASES = {
    "em-matrix-row": ("MatrixCapsNet conv_caps1, one row of 15 positions", {"name": "em"}, (240, 288, 32, 16)),
    "em-matrix-class": ("MatrixCapsNet class capsules", {"name": "em"}, (16, 5408, 10, 16)),
    "kernel-consensus-row": (
        "ConsensusCapsNet conv_caps2, one row of 12",
        {"name": "kernel", "num_components": 4},
        (192, 144, 16, 16),
    ),
    "kernel-consensus-class": ("ConsensusCapsNet class capsules", _KERNEL_CLASS, (16, 2304, 10, 16)),
    "lstm-consensus-row": ("ConsensusCapsNet-lstm conv_caps2, one row of 12", _LSTM_ROW, (192, 144, 16, 16)),
    "dynamic-consensus-row": (
        "ConsensusCapsNet-dynamic conv_caps2, one row of 12",
        {"name": "dynamic"},
        (192, 144, 16, 16),
    ),
    "dynamic-capsnet-class": ("CapsNet class capsules", {"name": "dynamic"}, (16, 18432, 10, 16)),
}


def _inputs(shape):
    import numpy as np

    rng = np.random.default_rng(0)
    votes = (rng.normal(size=shape) * 0.5).astype("float32")
    return votes, rng.uniform(size=shape[:2]).astype("float32")


def _router(spec, shape, jit_compile=None):
    import keras

    from keras_capsules import routing

    keras.utils.set_random_seed(0)
    router = routing.resolve(dict(spec, jit_compile=jit_compile), None, owner="roofline")
    router.build(shape)
    return router


def host_rates(side=2048, megabytes=512, repeats=5):
    """The host's float32 matrix-product GFLOP/s and elementwise bandwidth GB/s (read + write), TensorFlow."""
    import tensorflow as tf

    a = tf.random.normal((side, side))
    matmul = tf.function(lambda x: tf.matmul(x, x))
    big = tf.random.normal((megabytes * 2**20 // 4,))
    add = tf.function(lambda x: x + 1.0)  # one pass: each element read once and written once

    def seconds(fn, x):
        fn(x).numpy()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn(x).numpy()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    return {
        "matmul_gflops": 2 * side**3 / seconds(matmul, a) / 1e9,
        "bandwidth_gbs": 2 * big.shape[0] * 4 / seconds(add, big) / 1e9,
    }


def measure_tensorflow(case, repeats):
    """Step times with jit_compile off and on (alternating), and the library's counter on the plain graph."""
    import tensorflow as tf

    from benchmarks.op_counts import op_costs

    _, spec, shape = CASES[case]
    votes, acts = (tf.constant(x) for x in _inputs(shape))
    steps, graphs = {}, {}
    for jit in (False, True):
        router = _router(spec, shape, jit)

        def step(v, a, router=router):
            with tf.GradientTape() as tape:
                tape.watch([v, a])
                poses, out = router(v, a, training=True)
                loss = tf.reduce_sum(poses * poses) + tf.reduce_sum(out)
            gradients = tape.gradient(loss, [v, a] + router.trainable_weights)
            return [g for g in gradients if g is not None]  # dynamic routing reads no activations

        steps[jit] = tf.function(step)
        graphs[jit] = steps[jit].get_concrete_function(votes, acts).graph
    costs = op_costs(graphs[False])
    times = {False: [], True: []}
    first = {}
    for jit in (False, True):
        start = time.perf_counter()
        [g.numpy() for g in steps[jit](votes, acts)]
        first[jit] = time.perf_counter() - start
    for _ in range(repeats):
        for jit in (False, True):
            start = time.perf_counter()
            [g.numpy() for g in steps[jit](votes, acts)]
            times[jit].append(time.perf_counter() - start)
    return {
        "graph_gflop": sum(c.flops for c in costs) / 1e9,
        "graph_transcendental_g": sum(c.transcendental for c in costs) / 1e9,
        "plain_ms": 1e3 * statistics.median(times[False]),
        "xla_ms": 1e3 * statistics.median(times[True]),
        "plain_first_s": first[False],
        "xla_first_s": first[True],
        **host_rates(),
    }


def measure_jax(case):
    """XLA's cost analysis of the router's forward and backward under JAX."""
    import jax
    import jax.numpy as jnp

    _, spec, shape = CASES[case]
    votes, acts = (jnp.asarray(x) for x in _inputs(shape))
    router = _router(spec, shape)
    trainable = [v.value for v in router.trainable_variables]
    fixed = [v.value for v in router.non_trainable_variables]

    def loss(weights, v, a):
        (poses, out), _ = router.stateless_call(weights, fixed, v, a, training=True)
        return jnp.sum(poses * poses) + jnp.sum(out)

    compiled = jax.jit(jax.grad(loss, argnums=(0, 1, 2))).lower(trainable, votes, acts).compile()
    analysis = compiled.cost_analysis()
    analysis = analysis[0] if isinstance(analysis, (list, tuple)) else analysis
    return {
        "xla_gflop": analysis.get("flops", 0.0) / 1e9,
        "xla_transcendental_g": analysis.get("transcendentals", 0.0) / 1e9,
        "xla_gbytes": analysis.get("bytes accessed", 0.0) / 1e9,
    }


def child(case, backend, repeats):
    print_row(measure_jax(case) if backend == "jax" else measure_tensorflow(case, repeats))


def run_child(case, backend, repeats):
    command = module_command(__spec__.name, "--child", case, "--backend", backend, "--case", json.dumps(CASES[case]))
    row = child_row(command + ["--repeats", str(repeats)], env=dict(os.environ, KERAS_BACKEND=backend))
    if "error" in row:
        raise SystemExit(f"roofline: the {backend} process of {case} failed: {row['error']}")
    return row


def roofline_row(case, tf_row, jax_row):
    """One table row: the counts, times and shares of a case."""
    what, spec, shape = CASES[case]
    intensity = jax_row["xla_gflop"] / jax_row["xla_gbytes"] if jax_row["xla_gbytes"] else None
    attainable = min(tf_row["matmul_gflops"], tf_row["bandwidth_gbs"] * intensity) if intensity else None
    row = {"target": "roofline", "case": case, "what": what, "router": spec["name"], "votes": list(shape)}
    row.update(tf_row, **jax_row)
    row["intensity_flop_per_byte"] = intensity
    row["attainable_gflops"] = attainable
    for mode in ("plain", "xla"):
        achieved = jax_row["xla_gflop"] / (tf_row[f"{mode}_ms"] / 1e3)
        row[f"{mode}_gflops"] = achieved
        row[f"{mode}_share"] = achieved / attainable if attainable else None
    return row


def markdown(rows):
    lines = [
        "| case | GFLOP (XLA / graph) | transc. G | GB | flop/B | attainable GFLOP/s | plain ms | XLA ms | "
        "plain share | XLA share |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['xla_gflop']:.2f} / {r['graph_gflop']:.2f} | {r['xla_transcendental_g']:.3f} | "
            f"{r['xla_gbytes']:.2f} | {r['intensity_flop_per_byte']:.2f} | {r['attainable_gflops']:.1f} | "
            f"{r['plain_ms']:.0f} | {r['xla_ms']:.0f} | {100 * r['plain_share']:.0f} % | {100 * r['xla_share']:.0f} % |"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help=f"comma-separated cases (default: all of {list(CASES)})")
    parser.add_argument("--repeats", type=int, default=5, help="timed steps per mode (default 5)")
    parser.add_argument("--host-name", default=None, help="the host's name in the run file")
    parser.add_argument("--results", default=os.path.join(HERE, "results"), help="folder of the run file")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--backend", default="tensorflow", help=argparse.SUPPRESS)
    parser.add_argument("--case", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        if args.case:
            what, spec, shape = json.loads(args.case)
            CASES[args.child] = (what, spec, tuple(shape))
        return child(args.child, args.backend, args.repeats)
    chosen = args.only.split(",") if args.only else list(CASES)
    unknown = [c for c in chosen if c not in CASES]
    if unknown:
        raise SystemExit(f"roofline: argument --only: expected names among {list(CASES)}, received {unknown}")
    from benchmarks.runs import write_run

    started = datetime.datetime.now(datetime.timezone.utc)
    rows = []
    for case in chosen:
        rows.append(roofline_row(case, run_child(case, "tensorflow", args.repeats), run_child(case, "jax", 1)))
        print(markdown(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    ended = datetime.datetime.now(datetime.timezone.utc)
    print(markdown(rows))
    measured = (
        "each router alone, forward and backward (training=True), at the shapes an application routes at 64x64x3 "
        f"batch 16; TensorFlow step times with jit_compile off and on, alternating, the median of {args.repeats}; "
        "flops, transcendentals and bytes from XLA's cost analysis under JAX; the host's matrix-product and "
        "bandwidth roofs measured in each TensorFlow process"
    )
    write_run("roofline", args, (started, ended), measured, rows, "roofline")
    return 0


if __name__ == "__main__":
    main()
