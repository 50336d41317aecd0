"""InvertedAttentionCapsNet (CIFAR-10, simple backbone) training step at 1-5 routing iterations, in one run.

The concurrent schedule's cost is not linear in the iterations ``t`` below the number of capsule
layers ``L`` (3 here): a sweep's layer output reaches the top output only through the sweeps after
it, so a step makes ``sum_{k=1}^{t-1} min(k, L)`` full-vote routing steps (see
:class:`~keras_capsules.layers.ConcurrentRouting`): the second ConvCaps layer first forms its votes
at ``t = 3``, the first (the largest vote tensor) at ``t = 4``, and from there each iteration adds
one sweep of all three layers. The table's increments should therefore be equal from ``t = 4`` on;
a larger increment there means an iteration costs more than one sweep.

Every setting runs in its own process (``--worker``), the settings alternating over ``--rounds``
rounds, so that load changes on the host spread over all of them; the figure of a setting is the
median over its rounds of each process's median step (``train_on_batch``, after two untimed steps
that include tracing). Run it on an otherwise idle machine.

Usage: ``python -m benchmarks concurrent_iterations [--iterations 1 2 3 4 5] [--rounds 3]
[--steps 3] [--batch 32] [--output PATH]``; writes ``benchmarks/results/concurrent_iterations.json``
(or ``--output``) and prints a Markdown table.
"""

import argparse
import json
import os
import statistics
import subprocess

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

VARIANT = "cifar10-simple"


def worker(iterations, batch, steps):
    """Median seconds of ``steps`` training steps at ``iterations``, printed as one JSON line."""
    import keras
    import numpy as np

    from benchmarks.common import median_call_seconds
    from keras_capsules import applications

    model = applications.InvertedAttentionCapsNet(variant=VARIANT, routing_iterations=iterations)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=keras.losses.SparseCategoricalCrossentropy())
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(batch, 32, 32, 3)).astype("float32")
    y = rng.integers(0, 10, size=batch)
    seconds = median_call_seconds(lambda: model.train_on_batch(x, y), steps, warmup=2)
    print(json.dumps({"iterations": iterations, "seconds": seconds}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per process")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument(
        "--output", default=None, help="JSON path (default benchmarks/results/concurrent_iterations.json)"
    )
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.batch, args.steps)
        return
    from benchmarks.common import machine_description, write_results
    from benchmarks.runs import HERE, child_env, module_command

    runs = {t: [] for t in args.iterations}
    for round_ in range(args.rounds):
        for t in args.iterations:
            command = module_command(__spec__.name, "--worker", t, "--batch", args.batch, "--steps", args.steps)
            result = subprocess.run(command, capture_output=True, text=True, cwd=HERE, env=child_env())
            if result.returncode != 0:
                raise RuntimeError(
                    f"concurrent_iterations: the worker for {t} iterations failed:\n{result.stderr[-2000:]}"
                )
            runs[t].append(json.loads(result.stdout.strip().splitlines()[-1])["seconds"])
            print(f"round {round_ + 1}/{args.rounds}, {t} iterations: {runs[t][-1] * 1e3:.0f} ms", flush=True)
    medians = {t: statistics.median(times) for t, times in runs.items()}
    rows, previous = [], None
    for t in args.iterations:
        increment = None if previous is None else medians[t] - medians[previous]
        rows.append(
            {
                "iterations": t,
                "step_ms": medians[t] * 1e3,
                "increment_ms": None if increment is None else increment * 1e3,
                "runs_ms": [s * 1e3 for s in runs[t]],
            }
        )
        previous = t
    payload = {
        "machine": machine_description(),
        "model": f"InvertedAttentionCapsNet {VARIANT}, training step (train_on_batch), batch {args.batch}",
        "rounds": args.rounds,
        "steps_per_process": args.steps,
        "rows": rows,
    }
    if args.output:
        with open(args.output, "w") as handle:
            json.dump(payload, handle, indent=2)
        path = args.output
    else:
        path = write_results("concurrent_iterations", payload)
    print(f"\n{payload['model']}; {payload['machine']}\n")
    print("| iterations | step (ms) | increment (ms) |\n|---:|---:|---:|")
    for row in rows:
        increment = "" if row["increment_ms"] is None else f"{row['increment_ms']:.0f}"
        print(f"| {row['iterations']} | {row['step_ms']:.0f} | {increment} |")
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
