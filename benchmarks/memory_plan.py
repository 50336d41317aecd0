"""The memory plan's estimate against the measured peak memory of training, for every application.

    python -m benchmarks memory_plan [--phase check|calibrate] [--only NAME,...]

For each configuration (an application, an input shape, a batch) two fresh processes run one after
the other (never two measurements at once):

1. the estimate: the model built and compiled as ``keras-capsules train`` does (the recipe's
   optimizer, loss and metrics; a multi-stage recipe's last stage, which trains the whole model), then
   ``keras_capsules.training.memory_plan.estimate`` at the batch: the plan's parts, the raw simulated
   live bytes and op count;
2. the measurement, unless the estimate exceeds 16 GB or the memory free at that moment less a
   3 GB margin (then the row is ``skipped``: what ``memory_plan.check`` would refuse): the same
   model, three ``train_on_batch`` steps on random images and labels, and the process's peak
   resident memory (``VmHWM`` of ``/proc/self/status``, with ``ru_maxrss`` as a cross-check).

The estimate includes the process baseline: TensorFlow, Keras and keras_capsules imported and one
training step of a two-weight model, measured here once per run in a process of its own
(``baseline``), against the library's ``PROCESS_BASELINE_BYTES``.

``--phase calibrate`` runs the calibration set (other batches than the check set) and fits the two
constants of ``memory_plan`` by least squares on the relative error,
``measured - baseline - weights - optimizer = LIVE_FACTOR * live + BYTES_PER_OP * ops``, and prints
them; ``--phase check`` (default) runs the check set, two input shapes and two batches per
application, with the library's constants. Memory does not depend on the machine's load, so both
can run beside other work.

Writes ``<results>/YYYY-MM-DD-HHMM-<host>-memory-plan.json`` (``-memory-plan-calibration.json`` for
``--phase calibrate``; rows of target ``"memory-plan"`` or ``"memory-plan-calibration"`` for
``benchmarks/report.py``, one per configuration and batch: ``configuration``, ``input``, ``batch``, the
estimate's parts and ``estimate_bytes``, ``measured_bytes`` and ``ru_maxrss_bytes``, a calibration row's
``fitted_bytes``; a refused row has ``skipped`` instead of the measurement, one whose process failed has
``error``, both shown in the table's note; the run's ``baseline_bytes``, the host's ``ram_bytes`` and, when
calibrating, the ``fit``) and, for the repository's own results folder, regenerates BENCHMARKS.md.
"""

import argparse
import datetime
import json
import os
import resource
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.runs import child_row, module_command, run_or_child, run_parser, status_kib, write_run  # noqa: E402

#: Application configuration -> the recipe ``train`` uses for it: (model, dataset, variant), or the
#: default recipe fields (Adam, margin loss) where the library registers none (EffConvCapsNet).
RECIPES = {
    "EffCapsNet/mnist-reconstruction": ("EffCapsNet", "mnist", "default"),
    "CapsNet/mnist-reconstruction": ("CapsNet", "mnist", "default"),
    "FMCapsNet/cifar10": ("FMCapsNet", "cifar10", "default"),
    "EffConvCapsNet/128": None,
    "MatrixCapsNet/smallnorb": ("MatrixCapsNet", "smallnorb", "default"),
    "ConsensusCapsNet/smallnorb-kernel": ("ConsensusCapsNet", "smallnorb", "default"),
    "InvertedAttentionCapsNet/cifar10-resnet": ("InvertedAttentionCapsNet", "cifar10", "default"),
    "InvertedAttentionCapsNet/cifar10-simple": ("InvertedAttentionCapsNet", "cifar10", "simple"),
    "AgreementGLOM/cifar10": ("AgreementGLOM", "cifar10", "default"),
    "BaselineCNN/matched": ("BaselineCNN", "mnist", "default"),
}
#: The check set: (configuration, input shape, batches), two shapes per application where it builds at
#: two. InvertedAttentionCapsNet builds at 32x32x3 only (its class capsules hold one transform per
#: position), so its two variants stand for the two shapes; EffConvCapsNet needs at least 33x33.
#: MatrixCapsNet at 64x64x3 also at batch 128, twice its recipe's batch: an estimate above 16 GB, refused
#: and not run.
CHECK = [
    ("EffCapsNet/mnist-reconstruction", (28, 28, 1), (8, 16)),
    ("EffCapsNet/mnist-reconstruction", (64, 64, 3), (8, 16)),
    ("CapsNet/mnist-reconstruction", (28, 28, 1), (8, 16)),
    ("CapsNet/mnist-reconstruction", (64, 64, 3), (8, 16)),
    ("FMCapsNet/cifar10", (32, 32, 3), (8, 16)),
    ("FMCapsNet/cifar10", (64, 64, 3), (8, 16)),
    ("EffConvCapsNet/128", (64, 64, 3), (8, 16)),
    ("EffConvCapsNet/128", (128, 128, 3), (8, 16)),
    ("MatrixCapsNet/smallnorb", (32, 32, 1), (8, 16)),
    ("MatrixCapsNet/smallnorb", (64, 64, 3), (8, 16, 128)),
    ("ConsensusCapsNet/smallnorb-kernel", (32, 32, 1), (8, 16)),
    ("ConsensusCapsNet/smallnorb-kernel", (64, 64, 3), (8, 16)),
    ("InvertedAttentionCapsNet/cifar10-resnet", (32, 32, 3), (8, 16)),
    ("InvertedAttentionCapsNet/cifar10-simple", (32, 32, 3), (8, 16)),
    ("AgreementGLOM/cifar10", (32, 32, 3), (8, 16)),
    ("AgreementGLOM/cifar10", (64, 64, 3), (8, 16)),
    ("BaselineCNN/matched", (28, 28, 1), (8, 16)),
    ("BaselineCNN/matched", (64, 64, 3), (8, 16)),
]
#: The calibration set: other batches than the check set, graphs from 443 to about 71,000 ops.
CALIBRATION = [
    ("EffCapsNet/mnist-reconstruction", (28, 28, 1), (128,)),
    ("EffCapsNet/mnist-reconstruction", (64, 64, 3), (32,)),
    ("CapsNet/mnist-reconstruction", (28, 28, 1), (64,)),
    ("FMCapsNet/cifar10", (32, 32, 3), (32,)),
    ("EffConvCapsNet/128", (64, 64, 3), (32,)),
    ("EffConvCapsNet/128", (128, 128, 3), (4,)),
    ("MatrixCapsNet/smallnorb", (32, 32, 1), (4,)),
    ("MatrixCapsNet/smallnorb", (64, 64, 3), (4,)),
    ("ConsensusCapsNet/smallnorb-kernel", (32, 32, 1), (32,)),
    ("ConsensusCapsNet/smallnorb-kernel", (64, 64, 3), (4,)),
    ("InvertedAttentionCapsNet/cifar10-simple", (32, 32, 3), (32,)),
    ("AgreementGLOM/cifar10", (32, 32, 3), (32,)),
    ("BaselineCNN/matched", (28, 28, 1), (256,)),
]
CLASSES = 10
STEPS = 3
SKIP_ABOVE = 16 * 10**9
MARGIN = 3 * 10**9


def peak_resident():
    """``(VmHWM, ru_maxrss)`` of this process in bytes."""
    return status_kib("VmHWM") * 1024, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def compiled_model(configuration, input_shape):
    """The model of ``configuration`` at ``input_shape``, built and compiled by ``training.build_model`` as ``train`` compiles it."""
    from keras_capsules import recipes
    from keras_capsules.training import build_model

    names = RECIPES[configuration]
    if names is None:
        recipe = recipes.Recipe(model=configuration.split("/")[0], dataset="smallnorb", configuration=configuration)
    else:
        recipe = recipes.get(*names).stage_recipes()[-1][1]
    return build_model(recipe, CLASSES, input_shape)


def child_estimate(configuration, input_shape, batch):
    from keras_capsules.training import memory_plan

    model = compiled_model(configuration, input_shape)
    start = time.perf_counter()
    plan = memory_plan.estimate(model, batch)
    seconds = time.perf_counter() - start
    fields = (
        "parameters",
        "weights_bytes",
        "optimizer_bytes",
        "graph_bytes",
        "activation_bytes",
        "votes_bytes",
        "baseline_bytes",
        "step_live_bytes",
        "step_ops",
        "optimizer",
    )
    row = {name: getattr(plan, name) for name in fields}
    return dict(row, estimate_bytes=plan.peak_bytes, estimate_s=round(seconds, 1))


def child_measure(configuration, input_shape, batch):
    import numpy as np

    model = compiled_model(configuration, input_shape)
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(batch, *input_shape)).astype("float32")
    y = rng.integers(0, CLASSES, batch)
    for _ in range(STEPS):
        model.train_on_batch(x, y)
    hwm, maxrss = peak_resident()
    return {"measured_bytes": hwm, "ru_maxrss_bytes": maxrss}


def child_baseline():
    import keras
    import numpy as np

    import keras_capsules  # noqa: F401  (what a training process imports)

    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    model.train_on_batch(np.zeros((1, 1), "float32"), np.zeros((1, 1), "float32"))
    hwm, maxrss = peak_resident()
    return {"measured_bytes": hwm, "ru_maxrss_bytes": maxrss}


def run_child(*arguments):
    """Runs this script as a child with ``arguments``; its result, or ``{"error": last stderr line}``."""
    return child_row(module_command(__spec__.name, "--child", *arguments))


def measure_row(configuration, shape, batch):
    """One configuration: its estimate, then its measurement unless the estimate is above the limit (``skipped``)."""
    from keras_capsules.training import memory_plan

    row = {"configuration": configuration, "input": shape_text(shape), "batch": batch}
    row.update(run_child("estimate", configuration, shape_text(shape), str(batch)))
    limit = min(SKIP_ABOVE, free_memory() - MARGIN)
    if "error" not in row and row["estimate_bytes"] > limit:
        row["skipped"] = (
            f"estimate {memory_plan.format_size(row['estimate_bytes'])} above {memory_plan.format_size(limit)}"
        )
    elif "error" not in row:
        row.update(run_child("measure", configuration, shape_text(shape), str(batch)))
    if "measured_bytes" in row:
        row["ratio"] = round(row["estimate_bytes"] / row["measured_bytes"], 3)
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def free_memory():
    with open("/proc/meminfo") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("MemAvailable"))


def shape_text(shape):
    return "x".join(map(str, shape))


def ram_bytes():
    """The host's memory (``MemTotal``), bytes."""
    with open("/proc/meminfo") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("MemTotal"))


def fit(rows):
    """``(LIVE_FACTOR, BYTES_PER_OP)`` by least squares on the relative error over the measured ``rows``."""
    import numpy as np

    rows = [r for r in rows if "measured_bytes" in r]
    fixed = [r["baseline_bytes"] + r["weights_bytes"] + r["optimizer_bytes"] for r in rows]
    weight = np.array([1 / r["measured_bytes"] for r in rows])
    a = np.array([[r["step_live_bytes"], r["step_ops"]] for r in rows]) * weight[:, None]
    b = np.array([r["measured_bytes"] - f for r, f in zip(rows, fixed)]) * weight
    (factor, per_op), *_ = np.linalg.lstsq(a, b, rcond=None)
    return float(factor), float(per_op)


def rows_of(phase, found, constants=None):
    """The measured rows ``found`` (:func:`measure_row`) -> the run file's rows of target ``"memory-plan"`` (phase
    ``check``) or ``"memory-plan-calibration"``, without the progress line's ``ratio``; with ``constants``
    (``(LIVE_FACTOR, BYTES_PER_OP)``, :func:`fit`) each measured row gains ``fitted_bytes``, its estimate with them."""
    target = "memory-plan-calibration" if phase == "calibrate" else "memory-plan"
    rows = []
    for found_row in found:
        row = {"target": target, **{k: v for k, v in found_row.items() if k != "ratio"}}
        if constants and "measured_bytes" in row:
            factor, per_op = constants
            fixed = row["baseline_bytes"] + row["weights_bytes"] + row["optimizer_bytes"]
            row["fitted_bytes"] = round(fixed + factor * row["step_live_bytes"] + per_op * row["step_ops"])
        rows.append(row)
    return rows


def write(args, span, baseline, found):
    """The run file of ``found`` (:func:`rows_of`; calibrating, with the constants :func:`fit` gives) and the
    ``baseline`` process's figures; its path."""
    fields = {"baseline_bytes": baseline.get("measured_bytes"), "ram_bytes": ram_bytes()}
    constants = None
    if args.phase == "calibrate":
        constants = fit(found)
        fields["fit"] = {"LIVE_FACTOR": round(constants[0], 3), "BYTES_PER_OP": round(constants[1])}
        print(f"fit: LIVE_FACTOR = {constants[0]:.3f}, BYTES_PER_OP = {constants[1]:,.0f}", file=sys.stderr, flush=True)
    measured = (
        "peak resident memory (VmHWM) of a fresh process that builds and compiles the model as `train` does and runs "
        f"{STEPS} train_on_batch steps on random data, against memory_plan.estimate's peak from another fresh process; "
        "one process at a time, beside other work (memory, not time)"
    )
    rows = rows_of(args.phase, found, constants)
    kind = "memory-plan-calibration" if args.phase == "calibrate" else "memory-plan"
    return write_run("memory_plan", args, span, measured, rows, kind, **fields)


def run_all(args):
    from keras_capsules.training import memory_plan

    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    chosen = [name for name in args.only.split(",") if name]
    plan = [c for c in (CALIBRATION if args.phase == "calibrate" else CHECK) if not chosen or c[0] in chosen]
    baseline = run_child("baseline")
    print(
        f"baseline: {memory_plan.format_size(baseline['measured_bytes'])} measured, "
        f"{memory_plan.format_size(memory_plan.PROCESS_BASELINE_BYTES)} in the library",
        file=sys.stderr,
        flush=True,
    )
    found = [measure_row(configuration, shape, batch) for configuration, shape, batches in plan for batch in batches]
    ended = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return write(args, (started, ended), baseline, found)


def child(arguments):
    """A child process's result: the baseline, or a configuration's estimate or measurement."""
    kind, *rest = arguments
    if kind == "baseline":
        return child_baseline()
    configuration, shape, batch = rest[0], tuple(int(v) for v in rest[1].split("x")), int(rest[2])
    return (child_estimate if kind == "estimate" else child_measure)(configuration, shape, batch)


def parser():
    found = run_parser(__doc__, {})
    found.add_argument("--only", default="", help="comma-separated configurations (default: all of the phase's set)")
    found.add_argument("--phase", choices=("check", "calibrate"), default="check")
    found.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    return found


def main(argv=None):
    return run_or_child(parser().parse_args(argv), lambda args: child(args.child), run_all)


if __name__ == "__main__":
    main()
