"""The memory plan's estimate against the measured peak memory of training, for every application.

    python -m benchmarks memory_plan [--phase check|calibrate] [--only NAME,...] [--run-file FILE]

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
can run beside other work. Writes ``benchmarks/results/memory_plan.json`` (raw) and, with
``--run-file``, a run file for ``benchmarks/report.py``.
"""

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.runs import HERE, child_env, host_record, module_command  # noqa: E402

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
    with open("/proc/self/status") as handle:
        hwm = next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmHWM"))
    return hwm, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


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
    """Runs this script as a child with ``arguments``; its JSON result, or ``{"error": last stderr line}``."""
    done = subprocess.run(
        module_command(__spec__.name, "--child", *arguments), capture_output=True, text=True, cwd=HERE, env=child_env()
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if lines:
        return json.loads(lines[-1][len("RESULT ") :])
    return {"error": (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]}


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
    print(json.dumps(row), flush=True)
    return row


def free_memory():
    with open("/proc/meminfo") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("MemAvailable"))


def shape_text(shape):
    return "x".join(map(str, shape))


def host():
    """The run file's host (:func:`benchmarks.runs.host_record`) and its memory, ``ram_bytes``."""
    with open("/proc/meminfo") as handle:
        total = next(int(line.split()[1]) * 1024 for line in handle if line.startswith("MemTotal"))
    return {**host_record()[0], "ram_bytes": total}


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", choices=("check", "calibrate"), default="check")
    parser.add_argument("--only", default="", help="comma-separated configurations (default: all of the phase's set)")
    parser.add_argument(
        "--run-file", help="also write this run file for benchmarks/report.py (a name under benchmarks/results/)"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "baseline":
            result = child_baseline()
        else:
            configuration, shape, batch = rest[0], tuple(int(v) for v in rest[1].split("x")), int(rest[2])
            result = (child_estimate if kind == "estimate" else child_measure)(configuration, shape, batch)
        print("RESULT " + json.dumps(result))
        return

    from keras_capsules.training import memory_plan

    started = datetime.datetime.now(datetime.timezone.utc)
    chosen = [name for name in args.only.split(",") if name]
    plan = [c for c in (CALIBRATION if args.phase == "calibrate" else CHECK) if not chosen or c[0] in chosen]
    baseline = run_child("baseline")
    print(
        f"baseline: {memory_plan.format_size(baseline['measured_bytes'])} measured, "
        f"{memory_plan.format_size(memory_plan.PROCESS_BASELINE_BYTES)} in the library",
        flush=True,
    )
    rows = [measure_row(configuration, shape, batch) for configuration, shape, batches in plan for batch in batches]
    ended = datetime.datetime.now(datetime.timezone.utc)
    result = {"phase": args.phase, "baseline": baseline, "host": host(), "rows": rows}
    if args.phase == "calibrate":
        factor, per_op = fit(rows)
        result["fit"] = {"LIVE_FACTOR": round(factor, 3), "BYTES_PER_OP": round(per_op)}
        for row in rows:
            if "measured_bytes" in row:
                row["fitted_bytes"] = round(
                    row["baseline_bytes"]
                    + row["weights_bytes"]
                    + row["optimizer_bytes"]
                    + factor * row["step_live_bytes"]
                    + per_op * row["step_ops"]
                )
        print(f"fit: LIVE_FACTOR = {factor:.3f}, BYTES_PER_OP = {per_op:,.0f}")
    from benchmarks.common import write_results

    write_results("memory_plan", result)
    if args.run_file:
        write_run_file(args, result, started, ended)


def write_run_file(args, result, started, ended):
    """The run file for ``benchmarks/report.py``: host, date, command, what was measured, one row per configuration."""
    import keras
    import tensorflow as tf

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()
    target = "memory-plan-calibration" if args.phase == "calibrate" else "memory-plan"
    rows = [{"target": target, **{k: v for k, v in row.items() if k != "ratio"}} for row in result["rows"]]
    run = {
        "host": result["host"],
        "date": f"{started:%Y-%m-%d}",
        "time_utc": f"{started:%H:%M}-{ended:%H:%M}",
        "software": f"Python {platform.python_version()}, TensorFlow {tf.__version__} (CPU), Keras {keras.__version__}; the library at commit {commit}",
        "command": "python -m benchmarks memory_plan" + (" --phase calibrate" if args.phase == "calibrate" else ""),
        "measured": "peak resident memory (VmHWM) of a fresh process that builds and compiles the model as `train` does and runs "
        f"{STEPS} train_on_batch steps on random data, against memory_plan.estimate's peak from another fresh process; "
        "one process at a time, beside other work (memory, not time)",
        "source": "benchmarks/memory_plan.py",
        "baseline_bytes": result["baseline"].get("measured_bytes"),
        **({"fit": result["fit"]} if "fit" in result else {}),
        "rows": rows,
    }
    path = os.path.join(HERE, "results", args.run_file)
    with open(path, "w") as handle:
        json.dump(run, handle, indent=1)
        handle.write("\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
