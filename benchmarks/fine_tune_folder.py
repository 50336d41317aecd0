"""Fine-tuning ``EffCapsNet(weights="mnist")`` against training it from scratch, on the same small folder of images.

    nice -n 15 python -m benchmarks fine_tune_folder --data-dir DATA_DIR [--per-class 300] [--test-per-class 100]
        [--epochs 10] [--freeze-backbone-epochs 2] [--seed 0] [--work DIR] [--results DIR] [--host-name NAME]

The folder: the first ``--per-class`` images of each class of Fashion-MNIST's training split and, in
``test/``, the first ``--test-per-class`` of each class of its test split, read from the IDX files in
``--data-dir`` (or ``$KERAS_CAPSULES_DATA``) by the library's own reader and written as PNG files,
``FOLDER/train/<class>/`` and ``FOLDER/test/<class>/`` (class folders named after Fashion-MNIST's
classes, ``/`` written `` or ``). It is then read like any user's folder (``datasets.register_folder``).
Why Fashion-MNIST rather than a generated RGB set: its images are real, of ten classes the MNIST
preset never saw, and hard enough that neither run reaches 100 % in a few epochs (generated shapes
are, and the comparison would show nothing); its official test split gives a test set drawn apart
from the training images. Being 28x28 gray, the preset's own input, it measures what the pretrained
backbone is worth, not the gray->RGB rule of ``applications.fine_tune`` (tested there).

The runs, each one ``training.train("EffCapsNet", folder, ...)`` call with EffCapsNet's generic recipe
(``recipes.generic``: Adam 5e-4 x0.97 per epoch, batch 16, margin loss, ``random_shift``, no decoder),
the same ``--epochs``, the same ``--seed`` and the same stratified validation hold-out (a tenth of the
training images, drawn with the fixed validation seed):

- ``from scratch``: random initialisation (``weights=None``);
- ``fine-tuned, frozen``: ``weights="mnist"``, ``freeze_backbone_epochs=--freeze-backbone-epochs``;
- ``fine-tuned``: ``weights="mnist"``, nothing frozen.

Recorded per run: the validation accuracy after every epoch (both stages of the frozen run, in
order), the test accuracy and loss (``test/``, evaluated once, at the end of the run), the training
seconds; and the host, the date, the package measured and the files changed in ``keras_capsules/``
since its commit, the software. The settings were fixed before the first run and nothing is chosen by a
test score. It measures accuracy, not speed: the seconds are those of a machine shared with other work.
Writes ``benchmarks/results/YYYY-MM-DD-HHMM-<host>-fine-tune-folder.json`` (:func:`benchmarks.runs.write_run`)
for ``benchmarks/report.py`` and ``tools/docs_figures.py``.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODEL, PRESET = "EffCapsNet", "mnist"


def first_per_class(labels, per_class, classes):
    """Indices of the first ``per_class`` examples of each class in file order, class by class: ``int (classes * per_class,)``.

    Raises:
        ValueError: a class has fewer than ``per_class`` examples.
    """
    chosen = []
    for label in range(classes):
        found = np.flatnonzero(labels == label)[:per_class]
        if len(found) < per_class:
            raise ValueError(
                f"fine_tune_folder: class {label} has {len(found)} examples, fewer than --per-class {per_class}"
            )
        chosen.append(found)
    return np.concatenate(chosen)


def folder_name(class_name):
    """A class name as a folder name: ``"T-shirt/top"`` -> ``"T-shirt or top"``."""
    return class_name.replace("/", " or ")


def write_split(folder, images, labels, class_names):
    """Writes ``images`` ``uint8 (N, H, W, 1)`` as ``folder/<class>/<index in the split>.png``; returns the files written."""
    import tensorflow as tf

    for name in class_names:
        os.makedirs(os.path.join(folder, folder_name(name)), exist_ok=True)
    paths = []
    for index, (image, label) in enumerate(zip(images, labels)):
        path = os.path.join(folder, folder_name(class_names[label]), f"{index:05d}.png")
        tf.io.write_file(path, tf.io.encode_png(image))
        paths.append(path)
    return paths


def write_folder(folder, data_dir, per_class, test_per_class):
    """Writes the Fashion-MNIST folder (see the module docstring); returns what it holds, for the run file."""
    from keras_capsules import datasets

    names = datasets.class_names("fashion_mnist")
    record = {
        "source": "Fashion-MNIST IDX files (datasets.load_arrays)",
        "classes": [folder_name(n) for n in names],
        "train_per_class": per_class,
        "test_per_class": test_per_class,
    }
    for split, count in (("train", per_class), ("test", test_per_class)):
        images, labels = datasets.load_arrays("fashion_mnist", split, data_dir=data_dir)
        chosen = first_per_class(labels, count, len(names))
        write_split(os.path.join(folder, split), images[chosen], labels[chosen], names)
        words = "training" if split == "train" else "test"
        record[split] = (
            f"the first {count} images of each class of Fashion-MNIST's {words} split, {len(chosen)} PNG files in {split}/"
        )
    return record


def validation_curve(metrics):
    """Validation accuracy after every epoch of a run, its stages in order (``metrics.json``'s ``history``)."""
    history = metrics["history"]
    stages = [stage["name"] for stage in metrics["stages"] or []]
    keys = [f"{name}_val_accuracy" for name in stages[:-1]] + ["val_accuracy"]
    return [round(value, 4) for key in keys for value in history[key]]


def train_run(dataset, output, epochs, seed, weights=None, freeze=0):
    """One ``training.train`` call on the folder; its row of the run file."""
    from keras_capsules import training

    metrics = training.train(
        MODEL,
        dataset,
        epochs=epochs,
        seed=seed,
        output=output,
        weights=weights,
        freeze_backbone_epochs=freeze,
        export=False,
        verbose=2,
    )
    recipe = metrics["recipe"]
    return {
        "weights": f"{MODEL}/{weights}" if weights else None,
        "freeze_backbone_epochs": freeze,
        "epochs": metrics["epochs_completed"],
        "seed": seed,
        "validation_accuracy": validation_curve(metrics),
        "test_accuracy": round(metrics["test_accuracy"], 4),
        "test_loss": round(metrics["test_loss"], 4),
        "train_seconds": round(metrics["train_seconds"], 1),
        "parameters": metrics["parameters"],
        "training_examples": metrics["validation"]["training_examples"],
        "validation_examples": metrics["validation"]["examples"],
        "test_examples": metrics["dataset_folder"]["images"]["test"],
        "recipe": {
            key: recipe[key]
            for key in (
                "optimizer",
                "learning_rate",
                "lr_decay",
                "lr_floor",
                "batch_size",
                "loss",
                "augmentation",
                "model_kwargs",
            )
        },
        "adapted": (metrics["fine_tuned"] or {}).get("adapted"),
    }


def git(*arguments):
    return subprocess.run(["git", *arguments], capture_output=True, text=True, cwd=ROOT).stdout


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir",
        default=os.environ.get("KERAS_CAPSULES_DATA"),
        help="folder holding fashion-mnist/ (default: $KERAS_CAPSULES_DATA)",
    )
    parser.add_argument("--per-class", type=int, default=300, help="training images per class (default: 300)")
    parser.add_argument("--test-per-class", type=int, default=100, help="test images per class (default: 100)")
    parser.add_argument("--epochs", type=int, default=10, help="epochs of every run (default: 10)")
    parser.add_argument(
        "--freeze-backbone-epochs", type=int, default=2, help="frozen epochs of the frozen fine-tuning run (default: 2)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of every run (default: 0)")
    parser.add_argument(
        "--work", help="an empty or new folder for the images and the runs (default: a temporary folder)"
    )
    parser.add_argument("--results", default=os.path.join(HERE, "results"), help="folder of the run file")
    parser.add_argument("--host-name", default=None, help="the host's name (default: CPU, cores and date)")
    args = parser.parse_args(argv)
    if args.data_dir is None:
        parser.error("--data-dir (or $KERAS_CAPSULES_DATA): the folder holding fashion-mnist/ is required")
    work = args.work or tempfile.mkdtemp(prefix="fine-tune-folder-")
    if os.path.isdir(work) and os.listdir(work):
        parser.error(f"--work {work!r} is not empty")
    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    loads = [round(os.getloadavg()[0], 2)]
    changed = [line[3:] for line in git("status", "--porcelain", "--", "keras_capsules").splitlines()]  # "XY path"

    from keras_capsules import datasets

    folder = os.path.join(work, f"fashion-mnist-{args.per_class}")
    contents = write_folder(folder, args.data_dir, args.per_class, args.test_per_class)
    dataset = datasets.register_folder(folder).name
    plan = [
        ("from scratch", {}),
        ("fine-tuned, frozen", {"weights": PRESET, "freeze": args.freeze_backbone_epochs}),
        ("fine-tuned", {"weights": PRESET}),
    ]
    rows = []
    for run, options in plan:
        output = os.path.join(work, "runs", run.replace(", ", "-").replace(" ", "-"))
        row = train_run(dataset, output, args.epochs, args.seed, **options)
        rows.append({"target": "fine-tune-folder", "run": run, **row})
        print(json.dumps(rows[-1]), flush=True)
    ended = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    loads.append(round(os.getloadavg()[0], 2))
    from benchmarks.runs import write_run

    measured = (
        f"{MODEL} trained by `training.train` with its generic recipe on a folder: {contents['train']} (less a stratified "
        f"validation hold-out of a tenth), and {contents['test']}; from scratch, fine-tuned from the {PRESET} preset with the "
        f"backbone frozen for the first {args.freeze_backbone_epochs} epochs, and fine-tuned with nothing frozen; {args.epochs} epochs, seed "
        f"{args.seed}; validation accuracy after every epoch, test accuracy read once at the end; accuracy, not speed "
        "(beside other work)"
    )
    write_run(
        "fine_tune_folder",
        args,
        (started, ended),
        measured,
        rows,
        "fine-tune-folder",
        changed_since_commit=changed,
        load_average_1min={"start": loads[0], "end": loads[1]},
        folder=contents,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
