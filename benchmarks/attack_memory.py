"""The attacks' planned batch: the gradient's estimated peak memory against the measured one, per MNIST preset.

    python -m benchmarks attack_memory [--only PRESET,...]

For each preset and batch two fresh processes run one after the other (never two measurements at once):

1. the estimate: the preset opened as ``keras_capsules.evaluation.adversarial_examples`` opens it (its training
   loss, as ``keras-capsules robustness --attack`` reads it from the recipe), the gradient's estimated peak at the
   batch (``keras_capsules.evaluation.attack_memory.estimated_peak_bytes``: traced, not run) and the batch the
   plan would choose with 8 GB to use;
2. the measurement, unless the estimate exceeds the memory free at that moment less a 3 GB margin (then the
   row is ``skipped``): FGSM on that many random images in [0, 1] (one gradient call at the batch, routers
   compiled as the attack compiles them), and the process's peak resident memory (``VmHWM``).

Memory does not depend on the machine's load, so this can run beside other work. Writes
``<results>/YYYY-MM-DD-HHMM-<host>-attack-memory.json`` (rows of target ``"attack-memory"``: ``preset``,
``batch``, ``estimate_bytes``, ``planned_8gb``, ``measured_bytes``, or ``skipped`` / ``error``) and, for the
repository's own results folder, regenerates BENCHMARKS.md.
"""

import argparse
import datetime
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.memory_plan import free_memory  # noqa: E402
from benchmarks.runs import child_row, module_command, run_or_child, run_parser, status_kib, write_run  # noqa: E402

#: (preset, batches): each MNIST and Fashion-MNIST preset at the batch the full-set tool used, and the
#: routers whose gradients keep a quarter of a GB an image at two batches.
CHECK = [
    ("BaselineCNN/mnist", (250,)),
    ("CapsNet/mnist", (250,)),
    ("EffCapsNet/mnist", (250,)),
    ("ConsensusCapsNet/mnist-dynamic", (64, 250)),
    ("ConsensusCapsNet/mnist-em", (16, 64)),
    ("ConsensusCapsNet/mnist-kernel", (8, 25)),
    ("AgreementGLOM/fashion_mnist", (250,)),
    ("FMCapsNet/fashion_mnist", (250,)),
]
PLAN_LIMIT = 8 * 10**9
MARGIN = 3 * 10**9


def _prepared(preset, batch):
    """The attack on ``preset`` set up as ``adversarial_examples`` sets it up (no batch planned), and its images."""
    import numpy as np

    from keras_capsules.cli.robustness import training_loss
    from keras_capsules.evaluation import adversarial

    loss = (training_loss(preset) or (None, None))[0]
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(batch, 28, 28, 1)).astype("float32")
    y = rng.integers(0, 10, batch)
    prepared, x, labels, _ = adversarial._setup(
        "attack_memory", preset, x, y, "fgsm", [0.1], None, None, None, loss, batch, 0, None
    )
    return prepared, x, labels


def child_estimate(preset, batch):
    prepared, x, _ = _prepared(preset, batch)
    planned = prepared.planned_batch_size(x.shape[1:], 10_000, PLAN_LIMIT)
    return {"estimate_bytes": round(prepared.estimated_peak_bytes(x.shape[1:], batch)), "planned_8gb": planned}


def child_measure(preset, batch):
    prepared, x, labels = _prepared(preset, batch)
    prepared.run(x, labels, 0.1)
    return {"measured_bytes": status_kib("VmHWM") * 1024}


def run_child(*arguments):
    """Runs this script as a child with ``arguments``; its result, or ``{"error": last stderr line}``."""
    return child_row(module_command(__spec__.name, "--child", *arguments))


def measure_row(preset, batch):
    """One preset at one batch: its estimate, then its measurement unless the estimate does not fit (``skipped``)."""
    from keras_capsules.training.memory_plan import format_size

    row = {"target": "attack-memory", "preset": preset, "batch": batch}
    row.update(run_child("estimate", preset, str(batch)))
    limit = free_memory() - MARGIN
    if "error" not in row and row["estimate_bytes"] > limit:
        row["skipped"] = f"estimate {format_size(row['estimate_bytes'])} above the {format_size(limit)} free less 3 GB"
    elif "error" not in row:
        row.update(run_child("measure", preset, str(batch)))
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def run_all(args):
    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    chosen = [name for name in args.only.split(",") if name]
    found = [measure_row(p, b) for p, batches in CHECK if not chosen or p in chosen for b in batches]
    ended = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    measured = (
        "peak resident memory (VmHWM) of a fresh process that opens the preset and runs FGSM's one gradient call on "
        "that many random images, against attack_memory.estimated_peak_bytes from another fresh process; one process "
        "at a time, beside other work (memory, not time)"
    )
    return write_run("attack_memory", args, (started, ended), measured, found, "attack-memory")


def child(arguments):
    kind, preset, batch = arguments
    return (child_estimate if kind == "estimate" else child_measure)(preset, int(batch))


def parser():
    found = run_parser(__doc__, {})
    found.add_argument("--only", default="", help="comma-separated presets (default: all)")
    found.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    return found


def main(argv=None):
    return run_or_child(parser().parse_args(argv), lambda args: child(args.child), run_all)


if __name__ == "__main__":
    main()
