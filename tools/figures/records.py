"""The committed run records the figure blocks are written from, and where they live."""

import glob
import json
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RESULTS = os.path.join(ROOT, "docs", "results")
REGISTRY = os.path.join(ROOT, "keras_capsules", "presets", "registry.json")
BENCHMARK_RESULTS = os.path.join(ROOT, "benchmarks", "results")


def _json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def main_job_record():
    """``(record, path relative to docs/results/)`` of the newest main-job run record."""
    paths = sorted(glob.glob(os.path.join(RESULTS, "main-job", "*.json")))
    if not paths:
        raise FileNotFoundError(
            "docs_figures: no main-job record in docs/results/main-job/; run python tools/results/main_job.py"
        )
    return _json(paths[-1]), os.path.relpath(paths[-1], RESULTS)


def robustness_records():
    """The robustness records, by model (``"EffCapsNet/mnist"``), in file-name order."""
    records = [_json(path) for path in sorted(glob.glob(os.path.join(RESULTS, "robustness-mnist", "*.json")))]
    return {record["model"]: record for record in records}


def affnist_records():
    """The affNIST-style runs' ``metrics.json``, by model (``"FMCapsNet"``, ``"BaselineCNN"``)."""
    records = [_json(path) for path in sorted(glob.glob(os.path.join(RESULTS, "affnist-style", "*.json")))]
    return {record["model"]: record for record in records}


def preset(model, name):
    """The registry record of preset ``model/name``."""
    for record in _json(REGISTRY):
        if (record["model"], record["name"]) == (model, name):
            return record
    raise KeyError(f"docs_figures: no preset {model}/{name} in {os.path.relpath(REGISTRY, ROOT)}")


def fine_tune_folder_record():
    """``(record, file name)`` of the newest run file of ``benchmarks/fine_tune_folder.py``."""
    paths = sorted(glob.glob(os.path.join(BENCHMARK_RESULTS, "*-fine-tune-folder.json")))
    if not paths:
        raise FileNotFoundError(
            "docs_figures: no *-fine-tune-folder.json in benchmarks/results/; run python -m benchmarks fine_tune_folder"
        )
    return _json(paths[-1]), os.path.basename(paths[-1])


def newest_run(kind, script, keep=None):
    """``(record, file name)`` of the newest run file ``*-<kind>.json`` in benchmarks/results/, written by
    ``benchmarks/<script>``, among those ``keep(record)`` accepts (all without it)."""
    paths = sorted(glob.glob(os.path.join(BENCHMARK_RESULTS, f"*-{kind}.json")))
    for path in reversed(paths):
        record = _json(path)
        if keep is None or keep(record):
            return record, os.path.basename(path)
    raise FileNotFoundError(
        f"docs_figures: no *-{kind}.json of that kind in benchmarks/results/; run python -m benchmarks {script.removesuffix('.py')}"
    )


#: The input sides of the sweep the summary table reads. A run of benchmarks/scale.py at none of them (224 px, which
#: takes its own idle hour) is a supplement, summarised below the table with its own host.
SWEEP_SIZES = (32, 64, 128)


def sizes(record):
    """The input sides a scale run measured."""
    return {row["size"] for row in record["rows"]}


def scale_record():
    """The newest sweep of ``benchmarks/scale.py`` (the current package's, not a ``--before`` run nor a supplement)."""
    return newest_run("scale", "scale.py", lambda record: bool(sizes(record) & set(SWEEP_SIZES)))


def supplement_record():
    """The newest run of ``benchmarks/scale.py`` at sizes beyond the sweep's only, or ``None``."""
    try:
        return newest_run("scale", "scale.py", lambda record: not sizes(record) & set(SWEEP_SIZES))
    except FileNotFoundError:
        return None


def step_cost_record():
    """The newest run of ``benchmarks/scale_counts.py``."""
    return newest_run("step-cost", "scale_counts.py")


def first_step_record():
    """The newest run of ``benchmarks/first_step.py``."""
    return newest_run("first-step", "first_step.py")
