"""Runs the README's main job once from a clean copy of a commit and writes its run record for the docs.

    python tools/results/main_job.py [--commit HEAD] [--keep DIR]

Exports the commit's tree (``git archive``: nothing uncommitted, as a fresh clone has it), runs
``keras-capsules train EffCapsNet --epochs 3`` from it with this Python environment, and writes
``docs/results/main-job/<date>-<cpu>.json``: the host (CPU, cores, the 1-minute load average before
and after: other work on the machine slows the run), the date, the commit, the software, the run's
test accuracy, validation accuracy per epoch, steps, training seconds (``metrics.json``'s
``train_seconds``) and the command's wall seconds from start to exit (imports, data, training, test
and export; the install is not included). ``tools/docs_figures.py`` writes the pages' main-job
figures from the newest record.
"""

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from keras_capsules import host

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "docs" / "results" / "main-job"
COMMAND = ["train", "EffCapsNet", "--epochs", "3"]


def load_average():
    """The 1-minute load average (``None`` where the platform has none)."""
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def run_main_job(commit, folder):
    """Runs the main job from ``commit``'s tree exported into ``folder``; ``(metrics, wall seconds, loads)``."""
    source, output = Path(folder) / "source", Path(folder) / "run"
    source.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    environment = {**os.environ, "PYTHONPATH": str(source)}
    entry = "import sys; from keras_capsules.cli import main; sys.exit(main(sys.argv[1:]))"
    loads = [load_average()]
    start = time.monotonic()
    subprocess.run(
        [sys.executable, "-c", entry, *COMMAND, "--output", str(output)], env=environment, cwd=folder, check=True
    )
    seconds = time.monotonic() - start
    loads.append(load_average())
    return json.loads((output / "metrics.json").read_text()), seconds, loads


def record(metrics, commit, seconds, loads, now):
    """The compact run record of a main-job ``metrics.json``."""
    import keras
    import tensorflow as tf

    history = metrics["history"]
    return {
        "what": "the README's main job, run once from a clean export of the commit (no install in the time)",
        "command": "keras-capsules " + " ".join(COMMAND),
        "date": now.strftime("%Y-%m-%d"),
        "time_utc": now.strftime("%H:%M"),
        "commit": commit,
        "host": {
            "cpu": host.cpu_name(),
            "cores": os.cpu_count(),
            "gpu": None,
            "load_average_1min": {"start": loads[0], "end": loads[1]},
        },
        "software": {"python": platform.python_version(), "tensorflow": tf.__version__, "keras": keras.__version__},
        "dataset": metrics["dataset"],
        "epochs": metrics["epochs_completed"],
        "steps_per_epoch": metrics["steps_per_epoch"],
        "batch_size": metrics["recipe"]["batch_size"],
        "training_examples": metrics["validation"]["training_examples"],
        "validation_examples": metrics["validation"]["examples"],
        "parameters": metrics["parameters"],
        "validation_accuracy": [round(value, 4) for value in history["val_accuracy"]],
        "test_accuracy": round(metrics["test_accuracy"], 4),
        "train_seconds": round(metrics["train_seconds"], 1),
        "command_seconds": round(seconds, 1),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commit", default="HEAD", help="the commit whose tree runs (default HEAD)")
    parser.add_argument("--keep", help="a folder for the export and the run (default: a temporary one, removed)")
    args = parser.parse_args(argv)
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", args.commit], check=True, capture_output=True, text=True
    ).stdout.strip()
    now = datetime.datetime.now(datetime.timezone.utc)
    if args.keep:
        metrics, seconds, loads = run_main_job(commit, args.keep)
    else:
        with tempfile.TemporaryDirectory() as folder:
            metrics, seconds, loads = run_main_job(commit, folder)
    result = record(metrics, commit, seconds, loads, now)
    RECORDS.mkdir(parents=True, exist_ok=True)
    path = RECORDS / f"{result['date']}-{re.sub(r'[^a-z0-9]+', '-', host.cpu_name().lower()).strip('-')}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(
        f"{path.relative_to(ROOT)}: test accuracy {100 * result['test_accuracy']:.2f} %, {result['train_seconds']:.0f} s of training"
    )


if __name__ == "__main__":
    main()
