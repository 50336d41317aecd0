"""Turns a finished `keras-capsules train` run into a shipped preset: weights file, measured accuracy, registry record.

    python tools/presets/make_preset.py RUN_DIR --model EffCapsNet --name mnist \
        --kwargs '{"variant": "mnist", "reconstruction": true}' --dataset mnist --data-dir DATA_DIR \
        --subset-dataset mnist_sample --test-informed no --decisions "..." --description "..." \
        --limitations "..." --procedure "..." --citation-file paper.bib [--storage float16] [--notes "..."]

Steps: write the run's weights (RUN_DIR/model.keras) to keras_capsules/presets/files/<model>-<name>.npz,
register the preset, build `Model(weights=name)` through the public constructor, measure its accuracy
on the full test set and on the fixed subset (first --subset-limit test images, as they come: a model
that needs another input size pads or crops inside, e.g. AgreementGLOM's input_padding), and write the
record (with the training command from RUN_DIR/train.log, epochs/time/recipe and the validation
hold-out from RUN_DIR/metrics.json) into keras_capsules/presets/registry.json. The card's training log
is tools/presets/logs/<model>-<name>.md (--log), written by hand from the run's notes.
"""

import argparse
import datetime
import json
import os
import re

import numpy as np

import keras_capsules
from keras_capsules import applications, datasets, host, presets
from keras_capsules.presets import registry
from keras_capsules.saving import load_model


def accuracy(model, dataset, split, data_dir, limit=None, batch_size=256):
    """Top-1 accuracy by NumPy argmax over the model's class scores (the dataset's images as they come, in [0, 1])."""
    correct = total = 0
    batches = datasets.load(dataset, split, batch_size=batch_size, data_dir=data_dir, shuffle=False, limit=limit)
    for images, labels in batches:
        scores = model.predict_on_batch(images)
        correct += int(np.sum(np.argmax(scores, axis=-1) == labels.numpy()))
        total += len(labels)
    return correct / total, total


def last_command(log_path):
    """The command of the last (re)start in a run's log.

    Queue logs (``train_presets.sh``) have ``<time> <preset>: <command> --data-dir ...`` lines, background
    runs (``run_in_background.sh``) ``start <time> from <commit>: <command>`` lines; ``None`` when neither.
    """
    text = open(log_path, errors="replace").read()
    # A restart line may follow a killed run's unfinished progress bar on the same line.
    starts = re.findall(r"\d{4}-\d\d-\d\dT[0-9:]+Z \S+: (keras-capsules [^\n]*?) --data-dir", text)
    starts += re.findall(r"start \S+ from [0-9a-f]+: (keras-capsules [^\n]*?)(?: --data-dir \S+)?$", text, re.M)
    return starts[-1].strip() if starts else None


def logged_train_seconds(log_path):
    """Seconds of training summed over every epoch in a `keras-capsules train` log (all resumed sessions).

    Each epoch's last progress-bar update reads ``N/N ━━━ <seconds>s`` (the elapsed time; ``N/N - <seconds>s``
    in a ``verbose=2`` log); the update
    just before it may read ``N/N ━━━ 0s`` (the remaining time), hence the largest. Bars with another
    step count than the epoch's first bar (the evaluation after the last epoch) are left out.
    """
    text = re.sub(r"\x1b\[[0-9;]*m", "", open(log_path, errors="replace").read())
    total = 0
    for segment in re.split(r"\nEpoch \d+/\d+\n", text)[1:]:
        bars = re.findall(r"(\d+)/(\d+) (?:\S+|-) (\d+)s", segment)  # a progress bar, or verbose=2's "N/N - 92s"
        finished = [int(seconds) for done, steps, seconds in bars if done == steps == bars[0][1]]
        total += max(finished) if finished else 0
    return total


def train_seconds(run_metrics, log_path):
    """Seconds of training: the run's own per-epoch record when it covers every epoch, else the log's bars.

    ``metrics.json``'s ``history.epoch_seconds`` (one wall time per epoch, kept over resumes) is complete
    where a log is not: a restart can cut an epoch's last progress-bar update, and a run resumed on another
    machine may carry only its latest log. Older runs without that record fall back to
    :func:`logged_train_seconds`, then to ``train_seconds`` (the last process's time).
    """
    epoch_seconds = run_metrics.get("history", {}).get("epoch_seconds", [])
    if epoch_seconds and len(epoch_seconds) == int(run_metrics["epochs_completed"]):
        return round(float(sum(epoch_seconds)), 1)
    return float(logged_train_seconds(log_path) or run_metrics["train_seconds"])


def recorded_train_seconds(given, run_metrics, log_path):
    """``given`` (``--train-seconds``, pauses already subtracted) when set, else :func:`train_seconds` of the run."""
    if given is None:
        return train_seconds(run_metrics, log_path)
    if not given > 0:
        raise SystemExit(
            f"make_preset: argument --train-seconds expected a positive number of seconds, received {given}"
        )
    return round(float(given), 1)


def hardware():
    return f"{host.cpu_name()}, {os.cpu_count()} CPU cores, no GPU"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir")
    parser.add_argument("--model", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--kwargs", default="{}", help="constructor arguments the preset fixes (JSON)")
    parser.add_argument("--dataset", required=True, help="dataset of the full test set")
    parser.add_argument("--data-dir")
    parser.add_argument("--subset-dataset", help="dataset of the fixed subset (default: --dataset)")
    parser.add_argument("--subset-limit", type=int, default=1000)
    parser.add_argument("--command", help="the training command to record (default: the last one in RUN_DIR/train.log)")
    parser.add_argument("--storage", default="float32", choices=("float32", "float16"))
    parser.add_argument(
        "--train-seconds",
        type=float,
        default=None,
        help="the training time to record when the run's own record counts time that was not training "
        "(a job stopped with SIGSTOP for benchmarks: its epochs' wall times include the pause); default: the run's record",
    )
    parser.add_argument("--notes", default="", help="short remarks on the evaluation (the paper's figure, a target)")
    parser.add_argument("--metrics", default="{}", help="extra card entries (JSON)")
    parser.add_argument("--description", default="", help="what the model is (the card's opening)")
    parser.add_argument("--limitations", default="", help="intended use and limitations")
    parser.add_argument("--procedure", default="", help="the training procedure in a short paragraph")
    parser.add_argument("--log", help="training log page (default tools/presets/logs/<model>-<name>.md)")
    parser.add_argument(
        "--test-informed", required=True, choices=("yes", "no"), help="did any training decision follow a test score"
    )
    parser.add_argument("--decisions", required=True, help="one sentence: what the training decisions read")
    parser.add_argument("--citation-file", help="BibTeX of the paper(s)")
    parser.add_argument(
        "--export-only",
        action="store_true",
        help="only write the .npz from RUN_DIR/model.keras (run it with the library version that trained the run when "
        "its .keras format differs), then run again with --skip-export to measure and register",
    )
    parser.add_argument("--skip-export", action="store_true", help="use the .npz already written by --export-only")
    args = parser.parse_args(argv)

    run_metrics = json.load(open(os.path.join(args.run_dir, "metrics.json")))
    command = args.command or last_command(os.path.join(args.run_dir, "train.log"))
    if not command:
        parser.error(f"no training command found in {os.path.join(args.run_dir, 'train.log')}: pass --command")
    file_name = f"{args.model.lower()}-{args.name}.npz"
    path = os.path.join(registry.PACKAGE_DIR, file_name)
    if args.skip_export:
        digest = presets.sha256(path)
    else:
        trained = load_model(os.path.join(args.run_dir, "model.keras"), compile=False)
        digest = presets.save_weights(trained, path, dtype=args.storage)
        if args.export_only:
            print(f"wrote {path} ({os.path.getsize(path) / 1e6:.2f} MB)")
            return

    kwargs = json.loads(args.kwargs)
    kwargs.setdefault("classes", datasets.num_classes(args.dataset))
    kwargs.setdefault("input_shape", list(datasets.info(args.dataset).image_shape))
    held_out = run_metrics.get("validation")
    subset = {"dataset": args.subset_dataset or args.dataset, "split": "test", "limit": args.subset_limit}
    draft = dict(
        model=args.model,
        name=args.name,
        dataset=args.dataset,
        kwargs=kwargs,
        file=file_name,
        sha256=digest,
        test_accuracy=0.0,
        test_examples=0,
        subset_accuracy=0.0,
        subset=subset,
        parameters=0,
        recipe=(run_metrics["model"], run_metrics["dataset"], run_metrics["variant"]),
        command=command,
        epochs=int(run_metrics["epochs_completed"]),
        train_seconds=recorded_train_seconds(args.train_seconds, run_metrics, os.path.join(args.run_dir, "train.log")),
        hardware=hardware(),
        library_version=keras_capsules.__version__,
        date=datetime.date.today().isoformat(),
        storage_dtype=args.storage,
        description=args.description,
        limitations=args.limitations,
        procedure=args.procedure,
        log=args.log or f"tools/presets/logs/{file_name[:-4]}.md",
        validation=held_out if held_out and held_out.get("examples") else None,
        validation_curve=tuple(round(float(a), 4) for a in run_metrics.get("history", {}).get("val_accuracy", [])),
        test_informed=args.test_informed == "yes",
        decisions=args.decisions,
        citation=open(args.citation_file).read().strip() if args.citation_file else "",
        notes=args.notes,
        metrics=json.loads(args.metrics),
    )
    presets.register_preset(presets.Preset(**draft))
    model = getattr(applications, args.model)(weights=args.name)  # the public path, with the file that ships
    test_accuracy, test_examples = accuracy(model, args.dataset, "test", args.data_dir)
    subset_accuracy, _ = accuracy(model, subset["dataset"], "test", args.data_dir, limit=args.subset_limit)
    record = dict(
        draft,
        test_accuracy=round(test_accuracy, 6),
        test_examples=test_examples,
        subset_accuracy=round(subset_accuracy, 6),
        parameters=int(model.count_params()),
        recipe=list(draft["recipe"]),
        validation_curve=list(draft["validation_curve"]),
    )
    records = json.load(open(registry.REGISTRY_FILE)) if os.path.isfile(registry.REGISTRY_FILE) else []
    records = [r for r in records if (r["model"], r["name"]) != (args.model, args.name)] + [record]
    records.sort(key=lambda r: (r["model"], r["name"]))
    with open(registry.REGISTRY_FILE, "w") as handle:
        json.dump(records, handle, indent=2)
        handle.write("\n")
    print(
        f"{args.model}(weights={args.name!r}): test accuracy {100 * test_accuracy:.2f} % ({test_examples} images), "
        f"subset {100 * subset_accuracy:.2f} %, file {file_name} {os.path.getsize(path) / 1e6:.2f} MB"
    )


if __name__ == "__main__":
    main()
