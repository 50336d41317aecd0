"""An A/B of recipes' training steps under two settings, in alternating fresh processes: the child, the loop, the rows.

Not run on its own: a workload (``cpu_allocator``, ``recompute``) names its cases (``{case: (model, dataset, recipe,
batch size, steps, steps skipped before timing)}``) and its two settings (``{label: {"env": {...}, "train": {...}}}``:
the child's environment and :func:`keras_capsules.training.train` arguments, the first setting the baseline; its environment may set ``TF_ENABLE_ONEDNN_OPTS`` too);
:func:`measure` runs every case's processes (:func:`benchmarks.common.recipe_steps`), the settings' order reversed
every other round, and :func:`rows_of` turns their figures into the run file's rows. Every child runs with oneDNN
off, as the command line sets it on TensorFlow 2.21.
"""

import datetime
import json
import os
import statistics
import sys

#: The child process: ``recipe_steps`` of the case and ``train`` arguments in ``argv[1:]``, printed for the parent.
CHILD = (
    "import json, sys; from benchmarks.common import recipe_steps; from benchmarks.runs import print_row; "
    "model, dataset, recipe, batch, steps, skip, data, options = sys.argv[1:]; "
    "print_row(recipe_steps(model, dataset, recipe, int(batch), int(steps), int(skip), data or None, "
    "**json.loads(options)))"
)


def run_once(workload, case, label, setting, data_dir):
    """One fresh process's figures (:func:`benchmarks.common.recipe_steps`) for ``case`` (its tuple) with ``setting``."""
    from benchmarks.runs import child_row

    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0", "TF_CPP_MIN_LOG_LEVEL": "3", **setting.get("env", {})}
    options = json.dumps(setting.get("train", {}))
    row = child_row([sys.executable, "-c", CHILD, *map(str, case), data_dir or "", options], env=env)
    if "error" in row:
        raise SystemExit(f"{workload}: {case[:3]} with {label} failed: {row['error']}")
    return row


def measure(workload, cases, settings, rounds, data_dir):
    """``{case: {label: [figures of each process]}}`` of ``cases`` (``{case: its tuple}``) under ``settings``."""
    from benchmarks.runs import alternating

    figures = {case: {label: [] for label in settings} for case in cases}
    for case, spec in cases.items():
        for round_index, label in alternating(tuple(settings), rounds):
            figures[case][label].append(run_once(workload, spec, label, settings[label], data_dir))
            print(f"{case}, round {round_index + 1}, {label}: {figures[case][label][-1]}", file=sys.stderr, flush=True)
    return figures


def rows_of(figures, target, ratio_key):
    """The run file's rows of ``figures`` (``{case: {label: [figures of each process]}}``, the baseline label first):
    per case and setting the median step and each process's in ms, the medians of the kernel's CPU seconds per step
    and of the minor faults per step, the largest peak RSS, whether the step rematerialised, and on the second
    setting's row ``ratio_key``: the baseline's median step over its own."""
    rows = []
    for case, by_label in figures.items():
        medians = {label: statistics.median(p["median_step_seconds"] for p in runs) for label, runs in by_label.items()}
        baseline = next(iter(medians.values()))
        for index, (label, processes) in enumerate(by_label.items()):
            row = {
                "target": target,
                "case": case,
                "setting": label,
                "median_ms": round(1000 * medians[label], 1),
                "process_ms": [round(1000 * p["median_step_seconds"], 1) for p in processes],
                "system_s": round(statistics.median(p["system_seconds"] for p in processes), 2),
                "faults_k": round(statistics.median(p["minor_faults"] for p in processes) / 1000, 1),
                "peak_rss_mib": max(p["peak_rss_mib"] for p in processes),
            }
            if "recompute" in processes[0]:
                row["recompute"] = "on" if processes[0]["recompute"] else "off"
            if index:
                row[ratio_key] = round(baseline / medians[label], 2)
            rows.append(row)
    return rows


def main(argv, workload, doc, cases, settings, rows, measured, kind):
    """A workload's entry point: parses ``doc``'s options (``--rounds``, ``--cases``, ``--data-dir``), measures the cases
    asked for, and writes the run file of ``rows(figures)`` (``measured``: what it says was measured, given the
    rounds) as ``kind``."""
    from benchmarks.runs import run_parser, write_run

    parser = run_parser(doc, dict(rounds=2, cases=",".join(cases)))
    parser.add_argument("--data-dir", default=os.environ.get("KERAS_CAPSULES_DATA"), help="folder holding mnist/")
    args = parser.parse_args(argv)
    asked = args.cases.split(",")
    unknown = sorted(set(asked) - set(cases))
    if unknown:
        parser.error(f"--cases: unknown {', '.join(unknown)}; expected some of {', '.join(cases)}")
    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    figures = measure(workload, {case: cases[case] for case in asked}, settings, args.rounds, args.data_dir)
    ended = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    text = f"{measured}: the median of each fresh process's steps after the first few, {args.rounds} processes per setting, alternating"
    return write_run(workload, args, (started, ended), text, rows(figures), kind)
