"""Every registered application at its paper input shape: training-step time, inference throughput, peak memory.

Plus the papers' timing comparisons:
- FM agreement vs dynamic routing (3 iterations) inference on the same CapsNet, batch 128
  (Zhao, Wang & Huang, Table 1: 125 ms vs 158 ms on Fashion-MNIST, i7 CPU, i.e. FM 1.26x faster);
- InvertedAttentionCapsNet (CIFAR-10, simple backbone) training step at batch 32 with 1 and 2
  iterations (the reference PyTorch code: 2.5 s and 8.0 s on a 2-core CPU).

Each configuration runs in its own process so its peak resident memory can be read: the median ``model.fit``
step at ``--batch`` and the median ``predict_on_batch`` at batch 64 (the papers' inference cases at their batch).

Writes ``<results>/YYYY-MM-DD-HHMM-<host>-applications.json`` (rows of target ``"applications"`` for
``benchmarks/report.py``: ``configuration``, ``parameters``, ``input`` (e.g. ``"32x32x3"``), ``batch``,
``train_ms``, ``infer_ms``, ``images_s`` and ``rss_mib``, integers, ``None`` where a case measures no step or
no inference) and, for the repository's own results folder, regenerates BENCHMARKS.md. A configuration whose
process failed is left out of the rows and listed with its error under the run file's ``failed``.

Usage: ``python -m benchmarks applications [--only "NAME;NAME"] [--batch 32] [--steps 8]``
"""

import argparse
import datetime
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.runs import child_row, module_command, run_or_child, run_parser, write_run  # noqa: E402

DEFAULTS = dict(only="", batch=32, steps=8)

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
    """One configuration's figures in this process: parameters, input shape, batch, the training step and/or
    inference (ms, images/s; ``what``: ``"train"``, ``"inference"`` or ``"both"``) and the peak RSS (MiB)."""
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


def rows_of(found):
    """``{configuration: its child's figures}`` -> the run file's ``applications`` rows: ms, images/s and MiB
    rounded to integers, ``None`` for what the configuration does not measure; a failed child (``{"error": ...}``)
    is left out (:func:`write` lists it under ``failed``)."""

    def whole(value):
        return None if value is None else round(value)

    return [
        {
            "target": "applications",
            "configuration": name,
            "parameters": raw["params"],
            "input": "x".join(map(str, raw["input_shape"])),
            "batch": raw["batch"],
            "train_ms": whole(raw.get("train_step_ms")),
            "infer_ms": whole(raw.get("inference_ms")),
            "images_s": whole(raw.get("images_per_s")),
            "rss_mib": whole(raw["peak_rss_mib"]),
        }
        for name, raw in found.items()
        if "error" not in raw
    ]


def write(args, span, found):
    """The run file of ``found`` (:func:`rows_of`, the failed configurations and their errors as ``failed``); its
    path. Exits without one when every configuration failed."""
    rows = rows_of(found)
    failed = {name: raw["error"] for name, raw in found.items() if "error" in raw}
    if not rows:
        raise SystemExit(f"applications: every configuration failed, no run file written: {failed}")
    measured = (
        f"model.fit training step with the compiled paper loss (median of {args.steps} after 2 warm-up steps) at "
        f"batch {args.batch} and predict_on_batch inference (median of {args.steps} after 3) at batch 64 (the papers' "
        "cases: at the row's batch), each configuration in its own process; peak RSS of that process"
    )
    return write_run("applications", args, span, measured, rows, "applications", failed=failed)


def cases(only, batch):
    """The configurations to measure, ``{name: (constructor, kwargs, batch, what)}``: every registered one with a
    round trip (its step at ``batch`` and its inference) and :data:`PAPER_CASES`; ``only``: the ``;``-separated
    names to keep (all when empty)."""
    from keras_capsules import applications

    found = {}
    for name in applications.list_configurations():
        entry = applications.get_configuration(name)
        if entry.roundtrip:
            found[name] = (entry.constructor.__name__, entry.kwargs, batch, "both")
    found.update(PAPER_CASES)
    return {k: v for k, v in found.items() if not only or k in only.split(";")}


def run_all(args):
    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    found = {}
    for name, case in cases(args.only, args.batch).items():
        found[name] = child_row(module_command(__spec__.name, "--child", json.dumps(case), "--steps", args.steps))
        print(f"{name}: {json.dumps(found[name])}", file=sys.stderr, flush=True)
    ended = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return write(args, (started, ended), found)


def parser():
    parser = run_parser(__doc__, DEFAULTS)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    return parser


def measure_child(args):
    constructor, kwargs, batch, what = json.loads(args.child)
    return measure(constructor, kwargs, batch, args.steps, what)


def main(argv=None):
    return run_or_child(parser().parse_args(argv), measure_child, run_all)


if __name__ == "__main__":
    main()
