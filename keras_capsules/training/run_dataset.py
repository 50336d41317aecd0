"""Which dataset a run folder holds: the default output folder of a dataset, and the record that keeps two datasets
from sharing one.

A run writes ``OUTPUT/dataset.json`` before its first epoch: the dataset's name and, for a folder of
images, the folder's path and fingerprint (:mod:`~keras_capsules.datasets.folder_fingerprint`). A
later run in the same folder that would resume or reuse it (``resume=True``) on other images is
refused, naming both, instead of resuming one folder's checkpoints on another's images or returning
another folder's finished result; ``resume=False`` starts over in it.
"""

import hashlib
import json
import os

from keras_capsules import datasets
from keras_capsules.saving import atomic

#: The record's file in the run folder.
RECORD_FILE = "dataset.json"


def _folder(dataset):
    """The folder summary of ``dataset`` when it is a folder of images, else ``None``."""
    return datasets.folder_summary(dataset) if datasets.info(dataset).stratified_holdout else None


def default_output(model: str, dataset: str) -> str:
    """``runs/<model>-<dataset>``; for a folder of images, ``runs/<model>-<folder name>-<8 hex digits of its path's SHA-256>``,
    so that two folders of one name (``projA/data``, ``projB/data``) never share a run folder."""
    folder = _folder(dataset)
    if folder is not None:
        path = folder["path"]
        tag = hashlib.sha256(path.encode()).hexdigest()[:8]
        dataset = f"{os.path.basename(os.path.normpath(path)) or 'folder'}-{tag}"
    return os.path.join("runs", f"{model}-{dataset}")


def record(dataset: str) -> dict:
    """What ``dataset.json`` holds for ``dataset``: ``{"dataset"}``, with ``"folder"``, ``"class_names"`` and ``"fingerprint"``
    for a folder of images."""
    folder = _folder(dataset)
    if folder is None:
        return {"dataset": dataset}
    return {
        "dataset": dataset,
        "folder": folder["path"],
        "class_names": folder["class_names"],
        "fingerprint": folder["fingerprint"],
    }


def _describe(recorded):
    if "folder" not in recorded:
        return f"the dataset {recorded.get('dataset')!r}"
    fingerprint = recorded.get("fingerprint") or {}
    return (
        f"the folder {recorded['folder']} ({len(recorded.get('class_names') or ())} classes, "
        f"{fingerprint.get('files', '?')} images, fingerprint {str(fingerprint.get('sha256', '?'))[:12]})"
    )


def _same(recorded, wanted):
    if "folder" not in recorded and "folder" not in wanted:
        return recorded.get("dataset") == wanted.get("dataset")
    if "folder" in recorded and "fingerprint" not in recorded:  # a folder run's metrics.json from before the record
        return (recorded["folder"], recorded.get("class_names")) == (wanted.get("folder"), wanted.get("class_names"))
    return (recorded.get("fingerprint") or {}).get("sha256") == (wanted.get("fingerprint") or {}).get("sha256")


def _stored_run(output):
    """What ``output`` holds of an earlier run without a record: ``dataset.json``'s stand-in, or ``None`` when it holds none."""
    try:
        with open(os.path.join(output, "metrics.json")) as handle:
            metrics = json.load(handle)
    except (OSError, ValueError):
        metrics = None
    if isinstance(metrics, dict):
        folder = metrics.get("dataset_folder")
        if isinstance(folder, dict):
            return {
                "dataset": metrics.get("dataset"),
                "folder": folder.get("path"),
                "class_names": folder.get("class_names"),
            }
        return {"dataset": metrics.get("dataset")}
    checkpoints = os.path.join(output, "checkpoints")
    if os.path.isdir(checkpoints) and os.listdir(checkpoints):
        return {"dataset": "an unrecorded dataset (checkpoints written without dataset.json)"}
    return None


def check(output: str, model: str, dataset: str, resume: bool) -> None:
    """Refuses to resume or reuse, in ``output``, a run of another dataset (with ``resume``; without, it is started over).

    Raises:
        ValueError: ``output``'s ``dataset.json`` (or, without one, its ``metrics.json`` or checkpoints) names
            other images than ``dataset``'s; the message names both and how to go on.
    """
    if not resume:
        return
    wanted = record(dataset)
    try:
        with open(os.path.join(output, RECORD_FILE)) as handle:
            recorded = json.load(handle)
    except (OSError, ValueError):
        recorded = _stored_run(output)
        if recorded is None or ("folder" not in wanted and "folder" not in recorded):
            return  # nothing there, or a named dataset's run from before the record (checked as before)
    if not isinstance(recorded, dict):
        recorded = {"dataset": "an unreadable dataset.json"}
    if _same(recorded, wanted):
        return
    raise ValueError(
        f"train: argument `output` (CLI --output) expected a new folder or a run of the same images, received {output!r}, which holds a run "
        f"of {_describe(recorded)}, while this run reads {_describe(wanted)}. Resuming "
        f"it would train one on the other's checkpoints (or report the other's result): choose another output folder (the "
        f"default for this data is {default_output(model, dataset)}), or start over in it "
        "with resume=False (CLI: --no-resume), which replaces that run."
    )


def write(output: str, dataset: str) -> None:
    """Writes ``output/dataset.json`` (:func:`record`) atomically."""
    atomic.write_json(os.path.join(output, RECORD_FILE), record(dataset))
