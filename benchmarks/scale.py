"""Capsules at larger inputs: every application at 32, 64, 128 and 224 px RGB against the matched CNN.

For each application of :data:`APPLICATIONS` and each ``--sizes`` side ``S`` (input ``S x S x 3``, 10
classes, batch ``--batch``), one fresh process builds the model, compiles it as
``benchmarks/applications.py`` does (Adam, the library's loss for its scores) and measures:

- the first ``train_on_batch`` (tracing included, seconds) and the median of ``--steps`` steady ones
  after ``--warmup`` (milliseconds);
- inference: the median ``predict_on_batch`` per image (milliseconds);
- peak memory: the process's peak resident set (``VmHWM``) after the training steps (``train_peak_mb``)
  and after inference too (``peak_mb``), MB;
- counted GFLOP per image of one training step (``benchmarks/training_step_cost.py``'s counter on the
  same loss and batch) and the GFLOP/s the step achieves (``GFLOP per image * batch / step``);
- the host's float32 matrix-product throughput, GFLOP/s (a ``--matmul``-sided square product,
  median of repeats), in every process, so every run carries its own reference.

Processes alternate over the configurations ``--repeats`` times; each figure is the median of its
configuration's processes (the matrix product's: of every process of the run). The ``BaselineCNN``
row at the same input is the reference the report divides by.

Memory guard (``--skip-over-memory GB``; by default 80 % of the memory the machine has available when
the run starts, ``0`` for none): a configuration whose floor estimate (16 bytes per parameter:
weights, gradients and Adam's two moments) exceeds the limit is not started, and the parent polls
each process's resident set and kills it the moment it passes the limit; both are recorded as
``skipped`` with the reason, so no process is left to the machine's OOM killer (at 224 px several
applications pass 16 GB at batch 16). ``--timeout S`` stops
a process that runs longer (MatrixCapsNet's first step at 128 px traces for many minutes), likewise recorded. A constructor that
refuses the input (a minimum size, a fixed input) is recorded as ``refused`` with its error.

Writes the run file ``<results>/YYYY-MM-DD-HHMM-<host>-scale.json`` (rows of target ``"scale"``, the
format of ``benchmarks/report.py``) and, for the repository's own results folder, regenerates
BENCHMARKS.md. Timing figures are only valid on an otherwise idle machine; memory and counts are not
affected by the load.

Usage::

    python -m benchmarks scale [--sizes 32,64,128,224] [--batch 16] [--only MatrixCapsNet,BaselineCNN]
        [--steps 4] [--warmup 2] [--repeats 3] [--skip-over-memory 16] [--timeout 3600] [--host-name NAME]
    python -m benchmarks scale --quick --results /tmp/scale   # tiny settings, end to end in seconds
    PYTHONPATH=/tmp/old python -m benchmarks scale --before ...  # an earlier package (git archive COMMIT keras_capsules)

The run file records the package it measured (``package``: its folder and commit).
"""

import argparse
import datetime
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.runs import HERE, child_env, module_command, print_row, printed_rows, status_kib, write_run  # noqa: E402

#: label -> (registered configuration, constructor overrides). The paper configuration of each
#: application; ConsensusCapsNet also with the dynamic router (the scaling work's row) beside its paper's kernel router.
APPLICATIONS = {
    "BaselineCNN": ("BaselineCNN/matched", {}),
    "EffCapsNet": ("EffCapsNet/mnist", {}),
    "FMCapsNet": ("FMCapsNet/cifar10", {}),
    "EffConvCapsNet": ("EffConvCapsNet/128", {}),
    "AgreementGLOM": ("AgreementGLOM/cifar10", {}),
    "CapsNet": ("CapsNet/mnist", {}),
    "InvertedAttentionCapsNet": ("InvertedAttentionCapsNet/cifar10-simple", {}),
    "ConsensusCapsNet": ("ConsensusCapsNet/smallnorb-kernel", {}),
    "ConsensusCapsNet-dynamic": ("ConsensusCapsNet/smallnorb-kernel", {"router": "dynamic"}),
    "MatrixCapsNet": ("MatrixCapsNet/smallnorb", {}),
}
REFERENCE = "BaselineCNN"
CLASSES = 10
#: The sweep's settings, and --quick's: the CNN and the smallest EM network at 32 px, batch 2, one step of each kind.
DEFAULTS = dict(only=None, sizes="32,64,128,224", batch=16, steps=4, warmup=2, repeats=3, matmul=1024)
QUICK = dict(only="BaselineCNN,MatrixCapsNet-small", sizes="32", batch=2, steps=1, warmup=0, repeats=1, matmul=128)
QUICK_APPLICATIONS = {"MatrixCapsNet-small": ("MatrixCapsNet/smallnorb-small", {})}
KNOWN = {**APPLICATIONS, **QUICK_APPLICATIONS}


# --- one configuration, in its own process ------------------------------------------------------


#: The memory guard's default: this share of the memory the machine has available when the run starts.
DEFAULT_MEMORY_SHARE = 0.8


def default_memory_limit_gb(meminfo="/proc/meminfo", share=DEFAULT_MEMORY_SHARE):
    """``share`` of the machine's available memory now (``MemAvailable``), GB to one decimal; ``None`` where unknown."""
    try:
        with open(meminfo) as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return round(share * int(line.split()[1]) * 1024 / 1e9, 1)
    except OSError:
        return None
    return None


def matmul_gflops(side, repeats=5):
    """The host's float32 matrix-product throughput: ``2 side^3`` flops per ``side x side`` product, GFLOP/s (median)."""
    import numpy as np
    import tensorflow as tf

    from benchmarks.common import median_call_seconds

    rng = np.random.default_rng(0)
    a, b = (tf.constant(rng.normal(size=(side, side)).astype("float32")) for _ in range(2))
    product = tf.function(lambda: tf.linalg.matmul(a, b))
    seconds = median_call_seconds(lambda: product().numpy(), repeats, warmup=2)
    return 2 * side**3 / seconds / 1e9


def step_gflop_per_image(model, loss_fn, batch):
    """Counted GFLOP per image of one training step (``training_step_cost``'s counter on ``loss_fn``)."""
    from benchmarks.op_counts import op_costs
    from benchmarks.training_step_cost import train_step_graph

    graph, _ = train_step_graph(model, loss_fn, batch)
    return sum(row.flops for row in op_costs(graph)) / batch / 1e9


def inference_figures(model, x, steps):
    """``predict_on_batch(x)``: the first call's seconds (tracing included), the median of ``steps`` more
    calls in milliseconds per image, and the process's peak resident set after them (MB)."""
    start = time.perf_counter()
    model.predict_on_batch(x)
    first = time.perf_counter() - start
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        model.predict_on_batch(x)
        times.append(time.perf_counter() - start)
    return first, 1e3 * statistics.median(times) / len(x), status_kib("VmHWM") * 1024 / 1e6


def measure(label, size, batch, steps, warmup, matmul_side, limit_bytes, report_phase):
    """One configuration's figures (see the module docstring), or ``{"status": "refused"|"skipped", "why": ...}``."""
    import keras
    import numpy as np

    from benchmarks.applications import _loss_for
    from keras_capsules import applications

    row = {"matmul_gflops": matmul_gflops(matmul_side)}
    name, overrides = KNOWN[label]
    entry = applications.get_configuration(name)
    report_phase("build")
    try:
        model = entry.build(**{**overrides, "input_shape": (size, size, 3), "classes": CLASSES})
    except ValueError as error:
        return dict(row, status="refused", why=str(error).splitlines()[0])
    row["parameters"] = model.count_params()
    floor = 16 * row["parameters"]
    if limit_bytes and floor > limit_bytes:
        return dict(
            row,
            status="skipped",
            why=f"estimated at least {floor / 1e6:,.0f} MB (16 bytes per parameter), over {limit_bytes / 1e9:g} GB",
        )
    loss_fn = _loss_for(model)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=loss_fn)
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(batch, size, size, 3)).astype("float32")
    y = rng.integers(0, CLASSES, batch)
    report_phase("first training step")
    start = time.perf_counter()
    model.train_on_batch(x, y)
    row["first_step_s"] = time.perf_counter() - start
    report_phase("training steps")
    for _ in range(warmup):
        model.train_on_batch(x, y)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        model.train_on_batch(x, y)
        times.append(time.perf_counter() - start)
    row["step_ms"] = 1e3 * statistics.median(times)
    row["train_peak_mb"] = status_kib("VmHWM") * 1024 / 1e6
    report_phase("inference")
    _, row["infer_ms_per_image"], row["peak_mb"] = inference_figures(model, x, steps)
    report_phase("counting the step's flops")
    row["gflop_per_image"] = step_gflop_per_image(model, loss_fn, batch)
    return dict(row, status="measured")


def child_main(args):
    def report_phase(phase):
        print("PHASE " + phase, flush=True)

    limit = args.skip_over_memory * 1e9 if args.skip_over_memory else None
    print_row(measure(args.child, args.size, args.batch, args.steps, args.warmup, args.matmul, limit, report_phase))


# --- the run: processes alternating, guarded -----------------------------------------------------


def run_child(label, size, args, poll_s=0.1):
    """Runs one configuration in a fresh process under the memory guard; its row (``status`` always set)."""
    command = module_command(
        __spec__.name,
        *("--child", label, "--size", size, "--batch", args.batch, "--steps", args.steps),
        *("--warmup", args.warmup, "--matmul", args.matmul),
    )
    if args.skip_over_memory:
        command += ["--skip-over-memory", str(args.skip_over_memory)]
    limit_kib = args.skip_over_memory * 1e9 / 1024 if args.skip_over_memory else None
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(command, stdout=out, stderr=err, cwd=HERE, env=child_env(), text=True)
        started, killed = time.monotonic(), None
        while child.poll() is None:
            if limit_kib and (status_kib("VmRSS", child.pid) or 0) > limit_kib:
                killed = f"resident memory passed {args.skip_over_memory:g} GB"
            elif args.timeout and time.monotonic() - started > args.timeout:
                killed = f"not done within {args.timeout:g} s"
            if killed:
                child.send_signal(signal.SIGKILL)
                child.wait()
                break
            time.sleep(poll_s)
        out.seek(0)
        lines = out.read().splitlines()
        err.seek(0)
        errors = err.read().strip().splitlines()
    phases = [line[6:] for line in lines if line.startswith("PHASE ")]
    rows = printed_rows(lines)
    if killed:
        return {
            "status": "skipped",
            "why": f"{killed} during the {phases[-1] if phases else 'start'}; stopped by the guard",
        }
    if not rows:
        return {"status": "error", "why": (errors or [f"exit status {child.returncode}"])[-1][:300]}
    return rows[-1]


def merge(label, size, batch, rows):
    """One configuration's processes -> one run-file row: medians of the measured figures."""
    name, overrides = KNOWN[label]
    row = {
        "target": "scale",
        "application": label,
        "configuration": name,
        "overrides": overrides,
        "size": size,
        "input": f"{size}x{size}x3",
        "batch": batch,
    }
    measured = [r for r in rows if r["status"] == "measured"]
    if not measured:
        first = rows[0]
        return dict(row, status=first["status"], why=first.get("why"), parameters=first.get("parameters"))
    row.update(status="measured", processes=len(measured), parameters=measured[0]["parameters"])
    for key, digits in (
        ("step_ms", 1),
        ("first_step_s", 1),
        ("infer_ms_per_image", 3),
        ("train_peak_mb", 0),
        ("peak_mb", 0),
        ("gflop_per_image", 4),
    ):
        value = statistics.median(r[key] for r in measured)
        row[key] = round(value, digits) if digits else round(value)
    row["gflops"] = round(row["gflop_per_image"] * batch / (row["step_ms"] / 1e3), 2)
    return row


def run_all(args):
    labels = args.only.split(",") if args.only else list(APPLICATIONS)
    unknown = [label for label in labels if label not in KNOWN]
    if unknown:
        raise SystemExit(
            f"scale: argument --only: unknown application(s) {unknown}; expected some of {list(APPLICATIONS)}"
        )
    sizes = [int(s) for s in args.sizes.split(",")]
    started = datetime.datetime.now(datetime.timezone.utc)
    results = {(label, size): [] for size in sizes for label in labels}
    for repeat in range(args.repeats):
        for (label, size), rows in results.items():
            if repeat and rows[0]["status"] != "measured":
                continue  # refused or skipped: the same again
            rows.append(run_child(label, size, args))
            print(
                f"{label} {size}px (process {repeat + 1}/{args.repeats}): {json.dumps(rows[-1])}",
                file=sys.stderr,
                flush=True,
            )
    ended = datetime.datetime.now(datetime.timezone.utc)
    matmul = [r["matmul_gflops"] for rows in results.values() for r in rows if "matmul_gflops" in r]
    rows = [merge(label, size, args.batch, found) for (label, size), found in results.items()]
    matmul_median = round(statistics.median(matmul), 1) if matmul else None
    measured = (
        f"train_on_batch at batch {args.batch} (first step with tracing; median of {args.steps} after {args.warmup} "
        f"warm-up), predict_on_batch per image, peak RSS (VmHWM) and the counted GFLOP per image of a training "
        f"step, one process per configuration alternating over {args.repeats} repeat(s), medians; the host's "
        f"float32 {args.matmul}x{args.matmul} matrix product in every process"
        + (f"; memory guard at {args.skip_over_memory:g} GB" if args.skip_over_memory else "")
    )
    rows = [dict(row, target="scale-before" if args.before else "scale", matmul_gflops=matmul_median) for row in rows]
    kind = "scale-before" if args.before else "scale"
    return write_run("scale", args, (started, ended), measured, rows, kind, matmul_gflops=matmul_median)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", help=f"comma-separated input sides (RGB; default {DEFAULTS['sizes']})")
    parser.add_argument("--batch", type=int, help=f"default {DEFAULTS['batch']}")
    parser.add_argument("--only", help=f"comma-separated applications (default: all of {list(APPLICATIONS)})")
    parser.add_argument(
        "--steps",
        type=int,
        help=f"timed training steps and inference batches per process (default {DEFAULTS['steps']})",
    )
    parser.add_argument(
        "--warmup", type=int, help=f"untimed training steps after the first (default {DEFAULTS['warmup']})"
    )
    parser.add_argument(
        "--repeats", type=int, help=f"processes per configuration, alternating (default {DEFAULTS['repeats']})"
    )
    parser.add_argument(
        "--matmul", type=int, help=f"side of the reference float32 matrix product (default {DEFAULTS['matmul']})"
    )
    parser.add_argument(
        "--skip-over-memory",
        type=float,
        default=None,
        metavar="GB",
        help="skip a configuration whose estimate or resident memory passes GB (recorded as skipped; "
        f"default {100 * DEFAULT_MEMORY_SHARE:g} %% of the memory available when the run starts, 0 for no limit)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help="stop a process that runs longer than S seconds (recorded as skipped, with the phase it was in)",
    )
    parser.add_argument("--results", default=os.path.join(HERE, "results"), help="folder of the run file")
    parser.add_argument(
        "--host-name", default=None, help="the host's name in the run file (default: CPU, cores and date)"
    )
    parser.add_argument(
        "--before",
        action="store_true",
        help="the run measures an earlier package put first on PYTHONPATH, for a before/after comparison: its "
        "rows are recorded as 'scale-before' (a table of their own, read by no verdict), its file *-scale-before.json",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny settings where not given: " + ", ".join(f"{k}={v}" for k, v in QUICK.items()),
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for key, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.child:
        child_main(args)
        return 0
    if args.skip_over_memory is None:
        args.skip_over_memory = default_memory_limit_gb()
        if args.skip_over_memory is not None:
            print(
                f"scale.py: memory guard at {args.skip_over_memory:g} GB ({100 * DEFAULT_MEMORY_SHARE:g} % of the memory available now; "
                "--skip-over-memory to change)"
            )
    run_all(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
