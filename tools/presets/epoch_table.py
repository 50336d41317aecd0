"""The per-epoch table of a training log page, from a finished run's ``metrics.json``.

    python tools/presets/epoch_table.py RUN_DIR/metrics.json >> tools/presets/logs/<model>-<preset>.md

One row an epoch: the validation accuracy, the sparsity where the run pruned (REM's recipe records it), and
the epoch's seconds as the run recorded them (validation pass and any pause included); the seconds' sum goes
to standard error, for the page's prose.
"""

import argparse
import json
import sys


def epoch_table(run_metrics):
    """Markdown rows (a list of lines) of ``run_metrics["history"]``: ``val_accuracy``, ``sparsity``, ``epoch_seconds``."""
    history = run_metrics.get("history") or {}
    accuracy = history.get("val_accuracy")
    seconds = history.get("epoch_seconds")
    if not accuracy or not seconds or len(accuracy) != len(seconds):
        raise ValueError(
            "epoch_table: expected a history with one `val_accuracy` and one `epoch_seconds` an epoch, received "
            f"{len(accuracy or [])} and {len(seconds or [])} (a run without a validation hold-out has no table)"
        )
    sparsity = history.get("sparsity")
    if sparsity is not None and len(sparsity) != len(accuracy):
        raise ValueError(f"epoch_table: expected one `sparsity` an epoch ({len(accuracy)}), received {len(sparsity)}")
    columns = ["epoch", "validation accuracy (%)"] + (["sparsity (%)"] if sparsity else []) + ["seconds"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---:|" * len(columns)]
    for epoch, (value, took) in enumerate(zip(accuracy, seconds), 1):
        cells = [str(epoch), f"{100 * value:.2f}"] + ([f"{100 * sparsity[epoch - 1]:.2f}"] if sparsity else [])
        lines.append("| " + " | ".join(cells + [f"{took:,.0f}"]) + " |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("metrics", help="a run's metrics.json")
    args = parser.parse_args(argv)
    with open(args.metrics) as file:
        run_metrics = json.load(file)
    print("\n".join(epoch_table(run_metrics)))
    total = sum(run_metrics["history"]["epoch_seconds"])
    print(f"{len(run_metrics['history']['epoch_seconds'])} epochs, {total:,.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
