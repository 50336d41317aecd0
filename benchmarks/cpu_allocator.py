"""What TensorFlow's pooling CPU allocator is worth: training steps with ``malloc`` and with the BFC allocator.

    python -m benchmarks cpu_allocator [--rounds 2] [--cases main-job,consensus-kernel,consensus-lstm]
        [--data-dir DIR] [--results DIR] [--host-name NAME]

Each case trains a few steps of a recipe (:func:`benchmarks.common.recipe_steps`) in a fresh process with
``TF_CPU_ALLOCATOR_USE_BFC=false`` (TensorFlow allocates through ``malloc``) and in another with ``true`` (its
BFC allocator, which keeps freed blocks for the next step), alternately, ``--rounds`` times, with oneDNN off as
the command line sets it on TensorFlow 2.21 (with oneDNN on TensorFlow picks the BFC allocator itself). Cases
(:data:`CASES`): the README's main job (EffCapsNet on the embedded MNIST sample, batch 16) and ConsensusCapsNet's
MNIST recipes with the kernel and LSTM routers (batch 64; MNIST's IDX files under ``--data-dir``, default
``$KERAS_CAPSULES_DATA``). Each process reports the median of its steps after the first few, the CPU seconds
spent in the kernel per step (``malloc`` maps every block above 32 MB afresh, and each page of it faults on
first touch) and its minor page faults per step. The run file
(``benchmarks/results/YYYY-MM-DD-HHMM-<host>-cpu-allocator.json``) holds each case's settings as rows
(:func:`rows_of`). Why it is measured: the command line asks for the BFC allocator
(``keras_capsules.cli.cpu_allocator``).
"""

import datetime
import os
import statistics
import sys

#: ``{case: (model, dataset, recipe, batch size, steps, steps skipped before timing)}``.
CASES = {
    "main-job": ("EffCapsNet", "mnist_sample", "default", 16, 40, 10),
    "consensus-kernel": ("ConsensusCapsNet", "mnist", "default", 64, 8, 3),
    "consensus-lstm": ("ConsensusCapsNet", "mnist", "lstm", 64, 8, 3),
}
#: The settings, as ``TF_CPU_ALLOCATOR_USE_BFC``'s value and the row's label.
SETTINGS = {
    "false": "malloc (TF_CPU_ALLOCATOR_USE_BFC=false)",
    "true": "BFC (TF_CPU_ALLOCATOR_USE_BFC=true, the CLI's)",
}
#: The child process: ``recipe_steps`` of the case in ``argv[1:]``, its figures printed for the parent.
CHILD = (
    "import sys; from benchmarks.common import recipe_steps; from benchmarks.runs import print_row; "
    "model, dataset, recipe, batch, steps, skip, data = sys.argv[1:]; "
    "print_row(recipe_steps(model, dataset, recipe, int(batch), int(steps), int(skip), data or None))"
)


def run_once(case, setting, data_dir):
    """One fresh process's figures (:func:`benchmarks.common.recipe_steps`) for ``case`` with ``setting``."""
    from benchmarks.runs import child_row

    env = dict(os.environ, TF_CPU_ALLOCATOR_USE_BFC=setting, TF_ENABLE_ONEDNN_OPTS="0", TF_CPP_MIN_LOG_LEVEL="3")
    row = child_row([sys.executable, "-c", CHILD, *map(str, CASES[case]), data_dir or ""], env=env)
    if "error" in row:
        raise SystemExit(f"cpu_allocator: {case} with TF_CPU_ALLOCATOR_USE_BFC={setting} failed: {row['error']}")
    return row


def rows_of(figures):
    """The run file's rows of ``figures`` (``{case: {setting: [figures of each process]}}``, settings as in
    :data:`SETTINGS`): per case and setting the median step and each process's in ms, the medians of the kernel's
    CPU seconds per step and of the minor faults per step, the largest peak RSS, and on the BFC row malloc / BFC."""
    rows = []
    for case, by_setting in figures.items():
        medians = {s: statistics.median(p["median_step_seconds"] for p in by_setting[s]) for s in SETTINGS}
        for setting, label in SETTINGS.items():
            processes = by_setting[setting]
            row = {
                "target": "cpu-allocator",
                "case": case,
                "setting": label,
                "median_ms": round(1000 * medians[setting], 1),
                "process_ms": [round(1000 * p["median_step_seconds"], 1) for p in processes],
                "system_s": round(statistics.median(p["system_seconds"] for p in processes), 2),
                "faults_k": round(statistics.median(p["minor_faults"] for p in processes) / 1000, 1),
                "peak_rss_mib": max(p["peak_rss_mib"] for p in processes),
            }
            if setting == "true":
                row["malloc_over_bfc"] = round(medians["false"] / medians["true"], 2)
            rows.append(row)
    return rows


def main(argv=None):
    from benchmarks.runs import alternating, run_parser, write_run

    parser = run_parser(__doc__, dict(rounds=2, cases=",".join(CASES)))
    parser.add_argument("--data-dir", default=os.environ.get("KERAS_CAPSULES_DATA"), help="folder holding mnist/")
    args = parser.parse_args(argv)
    cases = args.cases.split(",")
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"--cases: unknown {', '.join(unknown)}; expected some of {', '.join(CASES)}")
    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    figures = {case: {setting: [] for setting in SETTINGS} for case in cases}
    for case in cases:
        for round_index, setting in alternating(tuple(SETTINGS), args.rounds):
            figures[case][setting].append(run_once(case, setting, args.data_dir))
            print(
                f"{case}, round {round_index + 1}, TF_CPU_ALLOCATOR_USE_BFC={setting}: {figures[case][setting][-1]}",
                file=sys.stderr,
                flush=True,
            )
    ended = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    measured = (
        f"training steps of each case's recipe with malloc and with TensorFlow's BFC allocator, oneDNN off: the median "
        f"of each fresh process's steps after the first few, {args.rounds} processes per setting, alternating"
    )
    return write_run("cpu_allocator", args, (started, ended), measured, rows_of(figures), "cpu-allocator")


if __name__ == "__main__":
    main()
