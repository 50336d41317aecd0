"""Every registered application at its paper input shape: training-step time, inference throughput, peak memory.

Plus the papers' timing comparisons:
- FM agreement vs dynamic routing (3 iterations) inference on the same CapsNet, batch 128
  (Zhao, Wang & Huang, Table 1: 125 ms vs 158 ms on Fashion-MNIST, i7 CPU, i.e. FM 1.26x faster);
- InvertedAttentionCapsNet (CIFAR-10, simple backbone) training step at batch 32 with 1 and 2
  iterations (the reference PyTorch code: 2.5 s and 8.0 s on a 2-core CPU).

Each model runs in its own process so its peak resident memory can be read.
Usage: ``python -m benchmarks applications [--only "NAME;NAME"] [--batch 32] [--steps 8]``; writes
``benchmarks/results/applications.json`` and prints Markdown tables.
"""

import argparse
import json
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

#: Extra timing cases from the papers: name -> (constructor, kwargs, batch, what is measured).
#: ``light_capsnet`` is Zhao, Wang & Huang's §4.1 network (ex4_1_light.py): Conv 9x9x64 ReLU -> PrimaryCaps
#: 9x9 s2, 8 types x 8D -> 10 x 16D class capsules, on 28x28x1 (Fashion-MNIST) input.
PAPER_CASES = {
    "light CapsNet, dynamic x1 (F-MNIST)": (
        "light_capsnet",
        {"router": "dynamic", "routing_iterations": 1},
        128,
        "inference",
    ),
    "light CapsNet, dynamic x3 (F-MNIST)": (
        "light_capsnet",
        {"router": "dynamic", "routing_iterations": 3},
        128,
        "inference",
    ),
    "light CapsNet, fm_agreement (F-MNIST)": ("light_capsnet", {"router": "fm_agreement"}, 128, "inference"),
    "InvertedAttentionCapsNet simple, 1 iteration": (
        "InvertedAttentionCapsNet",
        {"variant": "cifar10-simple", "routing_iterations": 1},
        32,
        "train",
    ),
    "InvertedAttentionCapsNet simple, 2 iterations": (
        "InvertedAttentionCapsNet",
        {"variant": "cifar10-simple", "routing_iterations": 2},
        32,
        "train",
    ),
}


def _loss_for(model):
    import keras

    from keras_capsules import losses

    activation = None
    for layer in reversed(model.layers):
        if isinstance(layer, keras.layers.Activation):
            activation = layer.get_config()["activation"]
            break
    if activation == "softmax":
        return keras.losses.SparseCategoricalCrossentropy()
    return losses.MarginLoss()


def light_capsnet(router, routing_iterations=None):
    """Zhao, Wang & Huang's original-CapsNet-shaped comparison network (ex4_1_light.py)."""
    import keras

    from keras_capsules import layers

    images = keras.Input((28, 28, 1))
    x = keras.layers.Conv2D(64, 9, activation="relu")(images)
    primary = layers.PrimaryCaps(8, 8, kernel_size=9, strides=2)(x)
    poses, activations = layers.FcCaps(10, 16, router=router, routing_iterations=routing_iterations, name="class_caps")(
        primary
    )
    return keras.Model(images, layers.Length()(poses) if router == "dynamic" else activations)


def measure(constructor, kwargs, batch, steps, what):
    import keras
    import numpy as np

    from benchmarks.common import peak_rss_mib, time_fit_step, time_inference
    from keras_capsules import applications

    model = light_capsnet(**kwargs) if constructor == "light_capsnet" else getattr(applications, constructor)(**kwargs)
    shape = tuple(model.inputs[0].shape[1:])
    classes = model.outputs[0].shape[-1]
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(max(batch, 64),) + shape).astype("float32")
    y = rng.integers(0, classes, len(x))
    row = {"params": model.count_params(), "input_shape": list(shape), "batch": batch}
    if what in ("train", "both"):
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=_loss_for(model))
        row["train_step_ms"] = 1e3 * time_fit_step(model, x, y, batch, steps=steps, warmup=2)
    if what in ("inference", "both"):
        seconds = time_inference(model, x, batch if what == "inference" else 64, repeats=steps)
        row["inference_ms"] = 1e3 * seconds
        row["images_per_s"] = (batch if what == "inference" else 64) / seconds
    row["peak_rss_mib"] = peak_rss_mib()
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default=None, help="semicolon-separated configuration names")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        constructor, kwargs, batch, what = json.loads(args.child)
        print(json.dumps(measure(constructor, kwargs, batch, args.steps, what)))
        return
    from benchmarks.common import machine_description, write_results
    from benchmarks.runs import HERE, child_env, module_command
    from keras_capsules import applications

    cases = {}
    for name in applications.list_configurations():
        entry = applications.get_configuration(name)
        if not entry.roundtrip:
            continue
        cases[name] = (entry.constructor.__name__, entry.kwargs, args.batch, "both")
    cases.update(PAPER_CASES)
    if args.only:
        cases = {k: v for k, v in cases.items() if k in args.only.split(";")}
    rows = []
    for name, case in cases.items():
        result = subprocess.run(
            module_command(__spec__.name, "--child", json.dumps(case), "--steps", args.steps),
            capture_output=True,
            text=True,
            cwd=HERE,
            env=child_env(),
        )
        row = {"name": name}
        if result.returncode:
            row["error"] = (result.stderr.strip().splitlines() or ["?"])[-1]
        else:
            row.update(json.loads(result.stdout.strip().splitlines()[-1]))
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
    payload = {"machine": machine_description(), "rows": rows}
    write_results("applications", payload)
    print(f"Machine: {payload['machine']}\n")
    print(
        "| configuration | parameters | input | batch | training step (ms) | inference (ms / batch) | images/s | peak RSS (MiB) |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    fmt = lambda v, f: "–" if v is None else format(v, f)  # noqa: E731
    for r in rows:
        if "error" in r:
            print(f"| {r['name']} | error: {r['error']} | | | | | | |")
            continue
        print(
            f"| {r['name']} | {r['params']:,} | {'x'.join(map(str, r['input_shape']))} | {r['batch']} | "
            f"{fmt(r.get('train_step_ms'), '.0f')} | {fmt(r.get('inference_ms'), '.0f')} | {fmt(r.get('images_per_s'), '.0f')} | {r['peak_rss_mib']:.0f} |"
        )


if __name__ == "__main__":
    main()
