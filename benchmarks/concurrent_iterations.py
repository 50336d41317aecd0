"""InvertedAttentionCapsNet (CIFAR-10, simple backbone) training step at 1-5 routing iterations, in one run.

The concurrent schedule's cost is not linear in the iterations ``t`` below the number of capsule
layers ``L`` (3 here): a sweep's layer output reaches the top output only through the sweeps after
it, so a step makes ``sum_{k=1}^{t-1} min(k, L)`` full-vote routing steps (see
:class:`~keras_capsules.layers.ConcurrentRouting`): the second ConvCaps layer first forms its votes
at ``t = 3``, the first (the largest vote tensor) at ``t = 4``, and from there each iteration adds
one sweep of all three layers. The table's increments should therefore be equal from ``t = 4`` on;
a larger increment there means an iteration costs more than one sweep.

Every setting runs in its own process (``--child``), the settings alternating over ``--rounds``
rounds, so that load changes on the host spread over all of them; the figure of a setting is the
median over its rounds of each process's median step (``train_on_batch``, after two untimed steps
that include tracing). Run it on an otherwise idle machine.

Writes ``<results>/YYYY-MM-DD-HHMM-<host>-concurrent-iterations.json`` (rows of target ``"idpa-iterations"``
for ``benchmarks/report.py``: ``iterations``, ``ours_ms``, the median step, and ``increment_ms``, this
count's step minus the previous count's, in ms) and, for the repository's own results folder,
regenerates BENCHMARKS.md. A process that failed is left out of its setting's median; a setting none
of whose processes ran keeps its row with ``error`` (the last failure), no step and no increments.

Usage: ``python -m benchmarks concurrent_iterations [--iterations 1,2,3,4,5] [--rounds 3] [--steps 3] [--batch 32]``
"""

import argparse
import datetime
import os
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.runs import child_row, module_command, run_or_child, run_parser, write_run  # noqa: E402

VARIANT = "cifar10-simple"
DEFAULTS = dict(iterations="1,2,3,4,5", rounds=3, steps=3, batch=32)


def measure(iterations, batch, steps):
    """One process's figure: the median seconds of ``steps`` training steps at ``iterations``."""
    import keras
    import numpy as np

    from benchmarks.common import median_call_seconds
    from keras_capsules import applications

    model = applications.InvertedAttentionCapsNet(variant=VARIANT, routing_iterations=iterations)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=keras.losses.SparseCategoricalCrossentropy())
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(batch, 32, 32, 3)).astype("float32")
    y = rng.integers(0, 10, size=batch)
    return {
        "iterations": iterations,
        "seconds": median_call_seconds(lambda: model.train_on_batch(x, y), steps, warmup=2),
    }


def rows_of(found):
    """``{iterations: [each round's process row]}`` (in the order run) -> the run file's rows: per setting the
    median over its processes that ran, in ms, and its increment over the setting before it."""
    rows, previous = [], None
    for iterations, processes in found.items():
        seconds = [p["seconds"] for p in processes if "error" not in p]
        step = statistics.median(seconds) if seconds else None
        row = {
            "target": "idpa-iterations",
            "iterations": iterations,
            "ours_ms": None if step is None else round(1e3 * step),
        }
        row["increment_ms"] = None if step is None or previous is None else round(1e3 * (step - previous))
        if step is None:
            row["error"] = processes[-1]["error"]
        rows.append(row)
        previous = step
    return rows


def write(args, span, found):
    """The run file of ``found`` (:func:`rows_of`), measured as ``args`` say; its path."""
    measured = (
        f"InvertedAttentionCapsNet {VARIANT} (32x32x3, 10 classes), training step (train_on_batch, Adam, cross-entropy) "
        f"at batch {args.batch} and {args.iterations.replace(',', ', ')} routing iterations: one process per setting, "
        f"the settings alternating over {args.rounds} round(s); per process the median of {args.steps} steps after two "
        "untimed ones (tracing included), per setting the median over its rounds, ms; increment: this setting's step "
        "minus the previous one's"
    )
    return write_run("concurrent_iterations", args, span, measured, rows_of(found), "concurrent-iterations")


def run_all(args):
    settings = [int(t) for t in args.iterations.split(",")]
    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    found = {t: [] for t in settings}
    for round_ in range(args.rounds):
        for t in settings:
            command = module_command(__spec__.name, "--child", t, "--batch", args.batch, "--steps", args.steps)
            found[t].append(child_row(command))
            figure = found[t][-1].get("error") or f"{found[t][-1]['seconds'] * 1e3:.0f} ms"
            print(f"round {round_ + 1}/{args.rounds}, {t} iterations: {figure}", file=sys.stderr, flush=True)
    ended = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return write(args, (started, ended), found)


def parser():
    found = run_parser(__doc__, DEFAULTS)
    found.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    return found


def main(argv=None):
    return run_or_child(parser().parse_args(argv), lambda args: measure(args.child, args.batch, args.steps), run_all)


if __name__ == "__main__":
    main()
