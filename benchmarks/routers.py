"""Router comparison: forward and training-step time and peak memory per router and iteration count.

Shapes (CapsNet's class-capsule layer and a small convolutional capsule layer): FcCaps 1152 x 8D -> 10 x 16D at batch 64, and ConvCaps 6x6x32 x 8D -> K3 s1 32 x 8D
at batch 16; routing iterations 1..5 (single-pass routers run once). Each (router, shape) runs in its
own process so its peak resident memory can be read; iterations run in increasing order, so the peak
after each iteration count is that configuration's peak (memory grows with iterations).

Scaling curves (``--sweep in_caps`` or ``--sweep out_caps``): the FC shape with the number of input
capsules (144 ... 2304) or output capsules (5 ... 40) varied, 3 iterations for iterative routers.

Usage: ``python -m benchmarks routers [--routers dynamic,em] [--iterations 1,3,5] [--repeats N] [--sweep in_caps|out_caps]``.
Prints a Markdown table and writes ``benchmarks/results/routers[_sweep].json``.
"""

import argparse
import json
import os
import subprocess

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--routers", default=None, help="comma-separated router names (default: all registered)")
    parser.add_argument("--shapes", default="fc,conv")
    parser.add_argument("--iterations", default="1,2,3,4,5")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument(
        "--sweep", choices=sorted(SWEEPS), default=None, help="scaling curve instead of the fixed shapes"
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    iterations = [int(i) for i in args.iterations.split(",")]
    if args.child:
        router, shape = args.child.split(":")
        print(json.dumps(measure(router, shape, iterations, args.repeats)))
        return
    from benchmarks.common import machine_description, write_results
    from benchmarks.runs import HERE, child_env, module_command
    from keras_capsules import routing

    routers = args.routers.split(",") if args.routers else routing.available()
    shapes = list(SWEEPS[args.sweep]) if args.sweep else args.shapes.split(",")
    iterations_arg = "3" if args.sweep else args.iterations
    rows = []
    for shape in shapes:
        for router in routers:
            child = module_command(
                __spec__.name,
                *("--child", f"{router}:{shape}", "--iterations", iterations_arg, "--repeats", args.repeats),
            )
            result = subprocess.run(child, capture_output=True, text=True, cwd=HERE, env=child_env())
            if result.returncode != 0:
                rows.append({"router": router, "shape": shape, "error": result.stderr.strip().splitlines()[-1]})
                continue
            rows.extend(json.loads(result.stdout.strip().splitlines()[-1]))
    payload = {"machine": machine_description(), "shapes": SHAPES, "rows": rows}
    write_results(f"routers_{args.sweep}" if args.sweep else "routers", payload)
    print(f"Machine: {payload['machine']}\n")
    print("| shape | router | iterations | forward (ms) | training step (ms) | peak RSS (MiB) |")
    print("|---|---|---:|---:|---:|---:|")
    for row in rows:
        if "error" in row:
            print(f"| {row['shape']} | {row['router']} | – | error: {row['error']} | | |")
            continue
        print(
            f"| {row['shape']} | {row['router']} | {row['iterations']} | {row['forward_ms']:.1f} | "
            f"{row['train_step_ms']:.1f} | {row['peak_rss_mib']:.0f} |"
        )


if __name__ == "__main__":
    main()
