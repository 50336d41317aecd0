"""Peak memory of one training step (or one inference batch): applications and single routed layers.

Each configuration runs in its own process and reports that process's peak resident set size
(``resource.getrusage(...).ru_maxrss``) after building (``built_mib``) and after the step
(``peak_mib``), the largest amount its tensors held at once during the step (``live_peak_mib``,
TensorFlow's allocator statistics: the RSS also counts memory the allocator keeps after a free), next to the size of the largest vote tensor of the model (``votes_mib``; the
analytic ``batch * positions * in_caps * out_caps * out_dim * 4`` bytes of each routed layer).
Memory does not depend on the load of the machine, so these numbers can be taken while it is busy.

Usage::

    python -m benchmarks memory app InvertedAttentionCapsNet/cifar10-simple --batch 32 --iterations 1,3
    python -m benchmarks memory router kernel --iterations 1,3,5 [--phase forward|train] [--no-remat]

``app`` takes a registered configuration (``keras_capsules.applications.list_configurations()``);
``--iterations`` sets ``routing_iterations``. ``router`` measures FcCaps 1152 x 8D -> 10 x 16D at
batch 64 (the router table's shape). ``--no-remat`` turns ``keras.remat`` into the identity (to see
what rematerialisation saves). Prints one JSON line per configuration and a Markdown table.
"""

import argparse
import json
import os
import subprocess

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# TensorFlow's CPU allocator counts live tensors (get_memory_info) only as a BFC allocator, which it
# picks by itself only with oneDNN on (CPUs with AVX-512 VNNI/BF16 or AMX, and TF_ENABLE_ONEDNN_OPTS unset).
os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")


def vote_tensors_mib(model, batch):
    """Analytic size (MiB, float32) of the vote tensor of every routed layer of ``model`` at ``batch``."""
    from keras_capsules.introspection import all_layers
    from keras_capsules.layers import ConvCaps, FcCaps

    sizes = {}
    for layer in all_layers(model):
        if isinstance(layer, (ConvCaps, FcCaps)) and layer.built:
            if layer.vote_transform.shared:
                continue
            in_caps = layer.vote_transform.kernel.shape[0]  # one transform per child
            positions = layer.output_grid[0] * layer.output_grid[1] if isinstance(layer, ConvCaps) else 1
            sizes[layer.name] = batch * positions * in_caps * layer.num_capsules * layer.out_dim * 4 / 2**20
    return sizes


def _train_step(model, x, y, loss_fn):
    """One plain gradient-descent step as a ``tf.function`` (no optimizer slots in the measurement)."""
    import tensorflow as tf

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        for variable, grad in zip(model.trainable_variables, grads):
            if grad is not None:
                variable.assign_sub(0.01 * grad)
        return loss

    return step


def measure_app(name, batch, iterations, phase):
    import keras
    import numpy as np
    import tensorflow as tf

    from benchmarks.common import live_peak_mib, peak_rss_mib, reset_live_peak
    from keras_capsules import applications

    entry = applications.get_configuration(name)
    overrides = {} if iterations is None else {"routing_iterations": iterations}
    model = entry.build(**overrides)
    shape = tuple(model.inputs[0].shape[1:])
    rng = np.random.default_rng(0)
    x = tf.constant(rng.uniform(size=(batch,) + shape).astype("float32"))
    classes = model.output_shape[-1]
    y = tf.constant(np.eye(classes, dtype="float32")[rng.integers(0, classes, batch)])
    built = peak_rss_mib()
    reset_live_peak()
    if phase == "train":
        _train_step(model, x, y, keras.losses.MeanSquaredError())().numpy()  # the loss does not change the memory
    else:
        tf.function(lambda: model(x, training=False))().numpy()
    return {
        "model": name,
        "batch": batch,
        "iterations": iterations,
        "phase": phase,
        "built_mib": round(built),
        "peak_mib": round(peak_rss_mib()),
        "live_peak_mib": round(live_peak_mib()),
        "votes_mib": {k: round(v) for k, v in vote_tensors_mib(model, batch).items()},
    }


def measure_router(router, iterations, phase):
    import numpy as np
    import tensorflow as tf

    from benchmarks.common import live_peak_mib, peak_rss_mib, reset_live_peak
    from keras_capsules import layers

    batch, (in_caps, in_dim), (out_caps, out_dim) = 64, (1152, 8), (10, 16)
    rng = np.random.default_rng(0)
    poses = tf.constant(rng.normal(size=(batch, in_caps, in_dim)).astype("float32") * 0.1)
    acts = tf.constant(rng.uniform(size=(batch, in_caps)).astype("float32"))
    layer = layers.FcCaps(out_caps, out_dim, router=router, routing_iterations=iterations)
    layer((poses[:1], acts[:1]))
    built = peak_rss_mib()
    reset_live_peak()
    if phase == "train":

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                out_poses, out_acts = layer((poses, acts), training=True)
                loss = tf.reduce_mean(tf.square(out_poses)) + tf.reduce_mean(tf.square(out_acts))
            return tape.gradient(loss, layer.trainable_weights)

        step()
    else:
        tf.function(lambda: layer((poses, acts), training=False))()
    return {
        "router": router,
        "iterations": iterations,
        "phase": phase,
        "built_mib": round(built),
        "peak_mib": round(peak_rss_mib()),
        "live_peak_mib": round(live_peak_mib()),
        "votes_mib": round(batch * in_caps * out_caps * out_dim * 4 / 2**20),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=("app", "router"))
    parser.add_argument("name", help="application configuration or router name")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument(
        "--iterations", default="", help="comma-separated routing iterations (app: default of the configuration)"
    )
    parser.add_argument("--phase", choices=("train", "forward"), default="train")
    parser.add_argument(
        "--no-remat", action="store_true", help="keras.remat as the identity (memory without rematerialisation)"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    counts = [int(i) for i in args.iterations.split(",") if i] or [None]
    if args.child:
        if args.no_remat:
            import keras

            keras.remat = lambda f: f
        count = counts[0]
        if args.kind == "app":
            row = measure_app(args.name, args.batch, count, args.phase)
        else:
            row = measure_router(args.name, count or 3, args.phase)
        row["remat"] = not args.no_remat
        print("ROW " + json.dumps(row))
        return
    from benchmarks.runs import HERE, child_env, module_command

    rows = []
    for count in counts:
        command = module_command(
            __spec__.name, args.kind, args.name, "--child", "--batch", args.batch, "--phase", args.phase
        )
        command += ["--iterations", str(count)] if count is not None else []
        command += ["--no-remat"] if args.no_remat else []
        done = subprocess.run(command, capture_output=True, text=True, cwd=HERE, env=child_env())
        lines = [line for line in done.stdout.splitlines() if line.startswith("ROW ")]
        row = (
            json.loads(lines[-1][4:])
            if lines
            else {"name": args.name, "iterations": count, "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
        )
        print(json.dumps(row), flush=True)
        rows.append(row)
    print(
        "\n| configuration | phase | iterations | remat | built (MiB) | peak RSS (MiB) | live tensors, peak (MiB) | vote tensors (MiB) |"
    )
    print("|---|---|---:|---|---:|---:|---:|---|")
    for row in rows:
        if "error" in row:
            print(f"| {args.name} | {args.phase} | {row['iterations']} | | error: {row['error']} | | | |")
            continue
        label = row.get("model") or f"FcCaps 1152x8 -> 10x16 b64, {row['router']}"
        batch = f" b{row['batch']}" if "batch" in row else ""
        print(
            f"| {label}{batch} | {row['phase']} | {row['iterations']} | {row['remat']} | {row['built_mib']} | {row['peak_mib']} | "
            f"{row['live_peak_mib']} | {row['votes_mib']} |"
        )


if __name__ == "__main__":
    main()
