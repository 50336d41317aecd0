"""The ``keras-capsules`` command line: ``train``, ``evaluate``, ``predict``, ``export``, ``recipes``, ``explain``, ``tune``, ``presets``.

Each subcommand is one ``add_<name>_command(commands)`` function that adds its parser and sets
``handler``; :data:`COMMANDS` lists them, so a new subcommand is one function and one list entry.
Building the parser imports neither Keras nor TensorFlow (``--help`` and ``--version`` answer at
once): every handler imports what it needs.
"""

import argparse
import ast
import contextlib
import difflib
import json
import linecache
import os
import re
import sys
import tempfile
import traceback

from keras_capsules.cli_options import DATA_DEFAULT, TRAINED_ON, augment_option, trained_on
from keras_capsules.cli_predict import add_predict_command
from keras_capsules.cli_robustness import add_robustness_command
from keras_capsules.version import __version__


def _key_values(pairs, flag):
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}`` (values parsed as Python literals when possible)."""
    result = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"keras-capsules: argument `{flag}` expected KEY=VALUE, received {pair!r}.")
        try:
            result[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            result[key] = raw
    return result


def _none_or(kind):
    def parse(text):
        return None if text.lower() == "none" else kind(text)

    parse.__name__ = kind.__name__
    return parse


def _model_name(name):
    """The application or recipe model called ``name`` in any case (``effcapsnet`` -> ``EffCapsNet``).

    Raises:
        ValueError: no such model; the message suggests the closest name.
    """
    from keras_capsules import applications, recipes

    constructors = [n for n in applications.__all__ if n[:1].isupper() and not isinstance(getattr(applications, n), type)]
    known = {model.lower(): model for model in [*constructors, *(model for model, _, _ in recipes.available())]}
    if name.lower() in known:
        return known[name.lower()]
    close = difflib.get_close_matches(name.lower(), list(known), n=1, cutoff=0.6)
    hint = f" Did you mean {known[close[0]]!r}?" if close else ""
    raise ValueError(f"no recipe for model {name!r}.{hint} Models (any case): {', '.join(sorted(set(known.values())))}.")


def _preset_option(text, flag):
    """``presets.find(text)``, or a ValueError naming ``flag`` and the presets."""
    from keras_capsules import presets

    key = presets.find(text)
    if key is None:
        raise ValueError(
            f"argument `{flag}` expected a preset MODEL/NAME or MODEL:NAME (one of {', '.join(presets.available())}), received {text!r}."
        )
    return key


#: The :class:`~keras_capsules.recipes.Recipe` fields settable from ``train``: field -> (value type, metavar, help).
#: A tuple type takes several values. Read without importing the recipes (which import Keras);
#: ``cli_test`` checks it against the Recipe's fields and types.
RECIPE_FLAGS = {
    "epochs": (int, "EPOCHS", "training epochs"),
    "batch_size": (int, "IMAGES", "images per training step"),
    "steps_per_epoch": (int, "STEPS", "optimizer steps per epoch, the data repeating ('none': one pass over the data)"),
    "optimizer": (str, "NAME", "adam, adamw or sgd"),
    "learning_rate": (float, "RATE", "initial learning rate (onecycle: the peak)"),
    "lr_schedule": (str, "NAME", "constant, exponential, step or onecycle"),
    "lr_decay": (float, "FACTOR", "exponential schedule: learning-rate factor per epoch (1: constant)"),
    "lr_decay_steps": (int, "STEPS", "exponential schedule: decay continuously, by --lr-decay every STEPS optimizer steps"),
    "lr_floor": (float, "RATE", "exponential schedule: lowest learning rate (0: none)"),
    "lr_milestones": (tuple[int], "EPOCH", "step schedule: epochs after which the learning rate is multiplied by --lr-gamma"),
    "lr_gamma": (float, "FACTOR", "step schedule: learning-rate factor at each milestone"),
    "momentum": (float, "COEFFICIENT", "SGD momentum coefficient"),
    "weight_decay": (float, "COEFFICIENT", "decoupled weight-decay coefficient, 'none' for off"),
    "loss": (str, "NAME", "margin, spread, crossentropy, binary_crossentropy or a loss class name"),
    "metrics": (tuple[str], "NAME", "compile metrics"),
    "augmentation": (str, "PRESET", "augmentation preset, 'none' for off"),
    "train_split": (str, "SPLIT", "split trained on"),
    "eval_on": (tuple[str], "SPLIT", "splits evaluated after training: SPLIT or DATASET:SPLIT"),
    "configuration": (str, "NAME", "registered application configuration, e.g. EffCapsNet/mnist-reconstruction"),
}
#: Recipe fields without a flag of that table (set by other flags, or not from the command line).
RECIPE_FIELDS_WITHOUT_FLAG = (
    "model", "dataset", "variant", "source", "model_kwargs", "dataset_options", "loss_kwargs", "spread_schedule", "stages", "pruning",
    "validation_examples",
)  # fmt: skip
#: The optional fields among them: 'none' gives None.
OPTIONAL_RECIPE_FLAGS = {"steps_per_epoch", "lr_decay_steps", "weight_decay", "augmentation", "configuration"}


def _add_recipe_flags(parser):
    """One ``--field-name`` flag per entry of :data:`RECIPE_FLAGS`."""
    group = parser.add_argument_group(
        "recipe overrides", "Each default is the value of the recipe trained (`keras-capsules recipes` lists them); "
        "'none' clears an optional value."
    )
    for field, (kind, metavar, text) in RECIPE_FLAGS.items():
        flag = "--" + field.replace("_", "-")
        help = f"{text} (default: the recipe's)"
        if getattr(kind, "__origin__", None) is tuple:
            group.add_argument(flag, nargs="*", type=kind.__args__[0], metavar=metavar, default=argparse.SUPPRESS, help=help)
        else:
            parse = _none_or(kind) if field in OPTIONAL_RECIPE_FLAGS else kind
            group.add_argument(flag, type=parse, metavar=metavar, default=argparse.SUPPRESS, help=help)
    group.add_argument(
        "--augment", dest="augmentation", type=_none_or(str), metavar="PRESET", default=argparse.SUPPRESS,
        help="alias of --augmentation (default: the recipe's)",
    )  # fmt: skip
    group.add_argument(
        "--stage-epochs", action="extend", nargs="+", metavar="STAGE=EPOCHS",
        help="epochs per stage of a two-stage recipe, e.g. `pretrain=20 classifier=5` for AgreementGLOM (default: --epochs for every stage)",
    )  # fmt: skip
    group.add_argument("--loss-arg", action="append", metavar="KEY=VALUE", help="loss constructor argument, repeatable (default: the recipe's)")
    group.add_argument("--dataset-option", action="append", metavar="KEY=VALUE", help="dataset option, repeatable (default: the recipe's)")
    group.add_argument(
        "--spread-arg", action="append", metavar="KEY=VALUE", help="spread-margin schedule argument, repeatable (default: the recipe's)"
    )


def _train(args):
    from keras_capsules.training import train

    overrides = {name: getattr(args, name) for name in RECIPE_FLAGS if hasattr(args, name)}
    for name, value in overrides.items():
        if isinstance(value, list):  # the tuple fields
            overrides[name] = tuple(value)
    for flag, field in (("loss_arg", "loss_kwargs"), ("dataset_option", "dataset_options"), ("spread_arg", "spread_schedule")):
        if getattr(args, flag):
            overrides[field] = _key_values(getattr(args, flag), "--" + flag.replace("_", "-"))
    model_kwargs = _key_values(args.model_arg, "--model-arg")
    stage_epochs = _key_values(args.stage_epochs, "--stage-epochs")
    if args.router:
        model_kwargs["router"] = args.router
    if args.routing_iterations:
        model_kwargs["routing_iterations"] = args.routing_iterations
    metrics = train(
        model=_model_name(args.model),
        dataset=args.dataset,
        output=args.output,
        data_dir=args.data_dir,
        limit=args.limit,
        seed=args.seed,
        verbose=0 if args.quiet else 1,
        export=not args.no_export,
        variant=args.recipe,
        download=args.download,
        strategy=args.strategy,
        resume=not args.no_resume,
        eval_limit=args.eval_limit,
        model_kwargs=model_kwargs,
        validation_examples=args.validation_examples,
        stage_epochs=stage_epochs,
        **overrides,
    )
    where = args.output or os.path.join("runs", f"{metrics['model']}-{metrics['dataset']}")
    scores = "; ".join(f"{split}: " + ", ".join(f"{k} {v:.4f}" for k, v in result.items()) for split, result in metrics["evaluations"].items())
    scores = scores or "no split evaluated (--eval-on without a split)"
    if metrics.get("already_complete"):
        print(
            f"\n{metrics['model']} on {metrics['dataset']}: this run was already complete ({_epochs(metrics['epochs_completed'])}); "
            f"its stored result: {scores}. Outputs in {where} (--no-resume trains it again)."
        )
        return 0
    resumed = f", resumed after epoch {metrics['resumed_from_epoch']}" if metrics["resumed_from_epoch"] else ""
    if metrics["resumed_from_epoch"] and metrics["resumed_from_epoch"] >= metrics["epochs_completed"]:
        resumed = ", all trained by an earlier run; now evaluated and saved"
    print(
        f"\n{metrics['model']} on {metrics['dataset']} ({_epochs(metrics['epochs_completed'])}{resumed}, "
        f"{metrics['train_seconds']:.0f} s training): {scores}. Outputs in {where}"
    )
    return 0


def _epochs(count):
    return f"{count} epoch" + ("" if count == 1 else "s")


def add_train_command(commands):
    train = commands.add_parser(
        "train",
        help="train an application with its paper recipe, evaluate, save and export (resumes after a crash)",
        description="Trains MODEL with its paper recipe, evaluates it and writes OUTPUT/metrics.json, OUTPUT/model.keras, "
        "OUTPUT/export (a SavedModel) and OUTPUT/checkpoints. Rerunning the same command resumes after the last completed "
        "epoch (also after Ctrl-C), or reports the stored result of a finished run. Every recipe value can be overridden "
        "with the flags below; `keras-capsules recipes` lists the recipes.",
    )
    train.add_argument("model", help="application constructor, any case, e.g. EffCapsNet or capsnet")
    train.add_argument("--dataset", default="mnist_sample", metavar="NAME", help="dataset name (default: mnist_sample, the embedded MNIST sample)")
    train.add_argument("--recipe", default="default", metavar="VARIANT", help="recipe variant, e.g. rem or novel_azimuth (default: default)")
    train.add_argument(
        "--strategy", default="default", choices=("default", "mirrored", "multi_worker"), help="tf.distribute strategy (default: default)"
    )
    train.add_argument("--router", metavar="NAME", help="router of the capsule layers, e.g. dynamic (default: the recipe's)")
    train.add_argument("--routing-iterations", type=int, metavar="ITERATIONS", help="routing iterations (default: the recipe's)")
    train.add_argument(
        "--model-arg", action="append", metavar="KEY=VALUE",
        help="constructor argument, repeatable, e.g. reconstruction=False (default: the recipe's)",
    )  # fmt: skip
    train.add_argument("--data-dir", metavar="FOLDER", help=f"folder with the dataset's standard files (default: {DATA_DEFAULT})")
    train.add_argument("--download", action="store_true", help="allow TFDS downloads (default: off)")
    train.add_argument("--limit", type=int, metavar="IMAGES", help="train on the first IMAGES training images only (default: all)")
    train.add_argument("--eval-limit", type=int, metavar="IMAGES", help="evaluate on the first IMAGES images only (default: all)")
    train.add_argument(
        "--validation-examples", type=int, metavar="IMAGES",
        help="images of the training split held out for validation after every epoch; 0 turns validation off "
        "(default: the recipe's, else min(5000, a tenth of the training images))",
    )  # fmt: skip
    train.add_argument("--output", metavar="FOLDER", help="output folder (default: runs/MODEL-DATASET)")
    train.add_argument("--seed", type=int, default=0, help="random seed of weights, shuffling and augmentation (default: 0)")
    train.add_argument("--no-resume", action="store_true", help="delete the checkpoints in the output folder and start over (default: resume)")
    train.add_argument("--no-export", action="store_true", help="skip the SavedModel export (default: export)")
    train.add_argument("--quiet", action="store_true", help="no progress bar (default: a progress bar per epoch)")
    _add_recipe_flags(train)
    train.set_defaults(handler=_train, interrupted="stopped; run the same command to resume")


def _evaluate(args):
    from keras_capsules.datasets import evaluation_dataset
    from keras_capsules.training import evaluate

    augment = augment_option(args.augment, args.model_file)
    dataset = evaluation_dataset(args.dataset or trained_on(args.model_file), args.split, args.data_dir)
    results = evaluate(
        args.model_file,
        dataset,
        split=args.split,
        batch_size=args.batch_size,
        data_dir=args.data_dir,
        download=args.download,
        limit=args.limit,
        augment=augment,
        **_key_values(args.dataset_option, "--dataset-option"),
    )
    print(json.dumps({"model": args.model_file, "dataset": dataset, "split": args.split, "augment": augment, **results}, indent=2))
    return 0


def add_evaluate_command(commands):
    evaluate = commands.add_parser(
        "evaluate",
        help="evaluate a .keras model on a dataset split",
        description="Evaluates MODEL.keras on a dataset split (with the evaluation transform it was trained with) and prints "
        "loss and metrics as JSON.",
    )
    evaluate.add_argument("model_file", metavar="MODEL.keras", help="the model file")
    evaluate.add_argument(
        "--dataset",
        metavar="NAME",
        help=f"dataset name; 'affnist|affine_mnist' is affNIST when its files are present, else the generated affine_mnist (default: {TRAINED_ON})",
    )
    evaluate.add_argument("--split", default="test", help="split evaluated (default: test)")
    evaluate.add_argument("--batch-size", type=int, default=64, metavar="IMAGES", help="images per step (default: 64 images)")
    evaluate.add_argument(
        "--augment",
        default="auto",
        metavar="PRESET",
        help="preset whose evaluation transform to apply, or 'none' (default: auto, the one in the metrics.json next to the model)",
    )
    evaluate.add_argument("--data-dir", metavar="FOLDER", help=f"folder with the dataset's standard files (default: {DATA_DEFAULT})")
    evaluate.add_argument("--download", action="store_true", help="allow TFDS downloads (default: off)")
    evaluate.add_argument("--limit", type=int, metavar="IMAGES", help="evaluate on the first IMAGES images only (default: all)")
    evaluate.add_argument("--dataset-option", action="append", metavar="KEY=VALUE", help="dataset option, repeatable (default: none)")
    evaluate.set_defaults(handler=_evaluate)


def _export(args):
    from keras_capsules.export import export_keras_file

    export_keras_file(args.model_file, args.output_dir, overwrite=args.overwrite, format=args.format)
    if args.format == "savedmodel":
        print(f"SavedModel written to {args.output_dir} (endpoints: serve, serving_default); it loads without keras_capsules.")
    else:
        runtime = "ONNX Runtime" if args.format == "onnx" else "the LiteRT interpreter"
        print(f"{args.format} file written to {args.output_dir}; it runs with {runtime}, without keras_capsules.")
    return 0


def add_export_command(commands):
    export = commands.add_parser(
        "export",
        help="export a .keras model to a standalone SavedModel, ONNX or LiteRT model",
        description="Writes MODEL.keras as a TensorFlow SavedModel (endpoints serve and serving_default; the default), an ONNX "
        "file (--format onnx, OUTPUT ending in .onnx) or a LiteRT file (--format litert, OUTPUT ending in .tflite), each "
        "runnable without keras_capsules. Nothing existing is replaced without --overwrite, and never MODEL.keras or the "
        "folder holding it.",
    )
    export.add_argument("model_file", metavar="MODEL.keras", help="the model file")
    export.add_argument(
        "output_dir", metavar="OUTPUT",
        help="savedmodel: a new folder (an existing non-empty one only with --overwrite); onnx/litert: a new file",
    )  # fmt: skip
    export.add_argument("--format", choices=("savedmodel", "onnx", "litert"), default="savedmodel", help="export format (default: savedmodel)")
    export.add_argument(
        "--overwrite", action="store_true", help="replace an existing OUTPUT, never one that holds MODEL.keras (default: off)"
    )
    export.set_defaults(handler=_export)


def _recipes(args):
    from keras_capsules import recipes

    for model, dataset, variant in recipes.available(args.model and _model_name(args.model)):
        recipe = recipes.get(model, dataset, variant)
        print(f"{model:26s} --dataset {dataset:20s} --recipe {variant:20s} {recipe.source}")
    return 0


def add_recipes_command(commands):
    listing = commands.add_parser(
        "recipes",
        help="list the paper recipes (model, dataset, variant, source)",
        description="Lists the registered paper recipes as `train` flags (--dataset, --recipe) with their sources.",
    )
    listing.add_argument("model", nargs="?", help="only this model's recipes, any case (default: every model's)")
    listing.set_defaults(handler=_recipes)


def _explain_folder(model_file):
    """``runs/explain-<name>``: the run folder's name for a ``train`` run's ``model.keras``, else the file's."""
    from keras_capsules.training.evaluation import training_record

    folder, name = os.path.split(os.path.abspath(model_file))
    if name == "model.keras" and training_record(model_file):
        return os.path.join("runs", "explain-" + os.path.basename(folder))
    return os.path.join("runs", "explain-" + os.path.splitext(name)[0])


def _explain(args):
    from keras_capsules import datasets
    from keras_capsules.interpret import explain
    from keras_capsules.interpret.explain import check_pictures
    from keras_capsules.saving import load_model

    check_pictures(args.num_images)  # before the model and data are loaded, and before any folder is made

    dataset = args.dataset or trained_on(args.model_file)
    model = load_model(args.model_file)
    data = datasets.load(
        dataset, args.split, batch_size=args.batch_size, data_dir=args.data_dir, download=args.download, limit=args.limit, shuffle=False
    )
    output = args.output or _explain_folder(args.model_file)
    report = explain(
        model,
        data,
        output,
        levels=args.levels,
        quantize=not args.no_quantize,
        num_images=args.num_images,
        include_dictionaries=args.dictionaries,
    )
    accuracy = "n/a" if report["accuracy"] is None else f"{report['accuracy']:.4f}"
    print(
        f"{args.model_file} on {dataset} ({args.split}, {report['num_samples']} images, K={args.levels}): accuracy {accuracy}, "
        f"routing entropy {report['entropy_mean']:.3f} +- {report['entropy_std']:.3f} bits, {report['num_trees_total']} parse trees. "
        f"Wrote entropy.json and {len(report['files'])} pictures to {output}"
    )
    return 0


def add_explain_command(commands):
    explain = commands.add_parser(
        "explain",
        help="REM report of a .keras model: routing entropy and parse trees (JSON), saliency and parse-tree PNGs",
        description="Writes the REM report of MODEL.keras: entropy.json (routing entropy, parse trees) and, with matplotlib, "
        "saliency.png and parse_tree_<i>.png.",
    )
    explain.add_argument("model_file", metavar="MODEL.keras", help="the model file")
    explain.add_argument("--dataset", metavar="NAME", help=f"dataset name (default: {TRAINED_ON})")
    explain.add_argument("--split", default="test", help="split read (default: test)")
    explain.add_argument("--data-dir", metavar="FOLDER", help=f"folder with the dataset's standard files (default: {DATA_DEFAULT})")
    explain.add_argument("--download", action="store_true", help="allow TFDS downloads (default: off)")
    explain.add_argument("--batch-size", type=int, default=100, metavar="IMAGES", help="images per step (default: 100 images)")
    explain.add_argument("--limit", type=int, metavar="IMAGES", help="use the first IMAGES images only (default: all)")
    explain.add_argument("--levels", type=int, default=11, help="K of REM's quantiser q_K, in quantisation levels (default: 11 levels)")
    explain.add_argument(
        "--no-quantize", action="store_true", help="run the routers unquantised; keys are still binned (default: quantised)"
    )
    explain.add_argument(
        "--num-images", type=int, default=8, metavar="IMAGES",
        help="images that get saliency and parse-tree pictures; 0: none, no matplotlib needed (default: 8 images)",
    )  # fmt: skip
    explain.add_argument(
        "--dictionaries", action="store_true", help="include every parse-tree key and count in the JSON (default: counts only)"
    )
    explain.add_argument(
        "--output", metavar="FOLDER",
        help="output folder (default: runs/explain-MODEL; runs/explain-RUN for the model.keras of a `train` run in folder RUN)",
    )  # fmt: skip
    explain.set_defaults(handler=_explain)


def _tune(args):
    from keras_capsules.tuning import tune

    routers = args.routers.split(",") if args.routers else None
    tuner, best = tune(
        _model_name(args.model),
        args.dataset,
        max_trials=args.max_trials,
        epochs=args.epochs,
        batch_size=args.batch_size,
        limit=args.limit,
        data_dir=args.data_dir,
        routers=routers,
        directory=args.output,
        overwrite=args.overwrite,
        seed=args.seed,
        verbose=0 if args.quiet else 1,
    )
    score = tuner.oracle.get_best_trials(1)[0].score
    print(f"best validation accuracy {score:.4f} with {best.values}")
    return 0


def add_tune_command(commands):
    tune = commands.add_parser(
        "tune",
        help="keras-tuner random search over router, iterations, capsule sizes, learning rate",
        description="Random search with keras-tuner on a validation split carved from the training split. A previous "
        "search in the tuner folder is continued unless --overwrite is given.",
    )
    tune.add_argument("model", help="application constructor, any case, e.g. EffCapsNet")
    tune.add_argument("--dataset", default="mnist_sample", metavar="NAME", help="dataset name (default: mnist_sample, the embedded MNIST sample)")
    tune.add_argument("--max-trials", type=int, default=5, metavar="TRIALS", help="trials of the random search (default: 5 trials)")
    tune.add_argument("--epochs", type=int, default=1, help="training epochs per trial (default: 1 epoch)")
    tune.add_argument("--batch-size", type=int, metavar="IMAGES", help="images per training step (default: the recipe's)")
    tune.add_argument(
        "--limit", type=int, metavar="IMAGES",
        help="use the first IMAGES training images, the last 10%% of them validating (default: all)",
    )  # fmt: skip
    tune.add_argument("--routers", metavar="NAMES", help="comma-separated routers to search (default: the model's and dynamic)")
    tune.add_argument("--data-dir", metavar="FOLDER", help=f"folder with the dataset's standard files (default: {DATA_DEFAULT})")
    tune.add_argument("--output", metavar="FOLDER", help="tuner folder (default: runs/tune)")
    tune.add_argument("--seed", type=int, default=0, help="random seed of the search and the trials (default: 0)")
    tune.add_argument(
        "--overwrite", action="store_true", help="discard a previous search in the tuner folder (default: continue it)"
    )
    tune.add_argument("--quiet", action="store_true", help="no progress bars (default: progress bars)")
    tune.set_defaults(handler=_tune, interrupted="stopped; run the same command to continue the search")


def _presets(args):
    from keras_capsules import presets

    if args.download:
        print(f"downloaded to {presets.download(*_preset_option(args.download, '--download'))}")
        return 0
    if args.card:
        print(presets.model_card(*_preset_option(args.card, "--card")), end="")
        return 0
    keys = presets.available(_model_name(args.model) if args.model else None)
    if not keys:
        print("no presets" + (f" for {args.model}" if args.model else ""))
        return 0
    rows = [("weights=", "test accuracy", "dataset", "parameters", "file")]
    for key in keys:
        model, name = key.split("/", 1)
        preset = presets.get(model, name)
        try:
            where = presets.locate(preset)
        except presets.PresetFileError:
            where = "not on this machine" + (" (--download)" if preset.url else "")
        rows.append((f"{model}(weights={name!r})", f"{100 * preset.test_accuracy:.2f} %", preset.dataset, f"{preset.parameters:,d}", where))
    print(_table(rows, right=(1, 3)))
    return 0


def _table(rows, right=()):
    """``rows`` of strings as aligned columns two spaces apart; the columns numbered in ``right`` are right-aligned."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.rjust(width) if column in right else cell.ljust(width) for column, (cell, width) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def add_presets_command(commands):
    listing = commands.add_parser(
        "presets",
        help="list the pretrained weights (accuracy on the full test set, parameters, file)",
        description="Pretrained weights load with MODEL(weights=NAME); the accuracy is measured on the full official test "
        "set with the file that ships. Files are searched inside the package, then in $KERAS_CAPSULES_PRESETS, then in "
        "the Keras cache (~/.keras/keras_capsules).",
    )
    listing.add_argument("model", nargs="?", help="only this model's presets, any case (default: every model's)")
    listing.add_argument("--card", metavar="MODEL/NAME", help="print the model card of one preset, in Markdown (default: the table)")
    listing.add_argument(
        "--download", metavar="MODEL/NAME", help="download a preset that has a URL into the Keras cache (default: no download)"
    )
    listing.set_defaults(handler=_presets)


#: Subcommand builders, in help order.
COMMANDS = [
    add_train_command, add_evaluate_command, add_predict_command, add_export_command, add_recipes_command, add_explain_command,
    add_tune_command, add_presets_command, add_robustness_command,
]  # fmt: skip
_VERBOSE_HELP = "show the traceback of user errors too (default: one line; unexpected errors always show theirs)"


def build_parser():
    """The ``keras-capsules`` parser; building it imports neither Keras nor TensorFlow."""
    parser = argparse.ArgumentParser(
        prog="keras-capsules",
        description="Capsule networks and GLOM for Keras 3. `keras-capsules COMMAND --help` describes each command.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--verbose", action="store_true", help=_VERBOSE_HELP)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add_command in COMMANDS:
        add_command(commands)
    for command in commands.choices.values():  # also after the command: keras-capsules train ... --verbose
        command.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS, help=_VERBOSE_HELP)
    return parser


#: Exception types of the library's user errors (a bad name, argument or file): one line unless --verbose.
USER_ERROR_TYPES = (ValueError, TypeError, LookupError, OSError, ImportError, NotImplementedError)
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def is_user_error(error):
    """Whether ``error`` reports bad input rather than a bug, so one line says all.

    True for an error of :data:`USER_ERROR_TYPES` that a ``raise`` statement of ``keras_capsules``
    raised on purpose, and for an ``OSError`` naming a file; an error escaping from a bug (a
    ``TypeError`` of a wrong call, an ``ImportError`` of a broken install) or from Keras or
    TensorFlow internals is not one, and keeps its traceback.
    """
    if not isinstance(error, USER_ERROR_TYPES):
        return False
    if isinstance(error, OSError) and error.filename is not None:
        return True
    last = error.__traceback__
    while last is not None and last.tb_next is not None:
        last = last.tb_next
    if last is None:
        return False
    filename = os.path.abspath(last.tb_frame.f_code.co_filename)
    return filename.startswith(_PACKAGE_DIR + os.sep) and linecache.getline(filename, last.tb_lineno).lstrip().startswith("raise ")


#: What TensorFlow's C++ libraries print at INFO level while they load, whatever TF_CPP_MIN_LOG_LEVEL says
#: ("oneDNN custom operations are on ...", and absl's preamble to it).
_NATIVE_INFO_LINE = re.compile(r"I\d{4} [\d:.]+ +\d+ \S+:\d+\] |WARNING: All log messages before absl::InitializeLog\(\) is called")
#: The CUDA build of TensorFlow (the ``tensorflow`` package) on a machine without an NVIDIA driver: an
#: ERROR line that only says there is no GPU. Dropped only where no driver is loaded (``/proc/driver/nvidia``).
_NO_DRIVER_LINE = re.compile(r"E\d{4} [\d:.]+ +\d+ cuda_platform\.cc:\d+\] failed call to cuInit")


def _dropped(line):
    """Whether ``line`` of native stderr output is noise (:data:`_NATIVE_INFO_LINE`, :data:`_NO_DRIVER_LINE`)."""
    return bool(_NATIVE_INFO_LINE.match(line) or (_NO_DRIVER_LINE.match(line) and not os.path.exists("/proc/driver/nvidia")))


@contextlib.contextmanager
def _native_info_lines_dropped():
    """Drops the INFO lines native code writes to file descriptor 2 inside the block; every other line is kept, in order."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no file descriptor 2: nothing to filter
        yield
        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            lines = captured.read().decode(errors="replace").splitlines(keepends=True)
            sys.stderr.write("".join(line for line in lines if not _dropped(line)))
            sys.stderr.flush()


def _import_keras():
    """Imports Keras (and its backend) once, and finds TensorFlow's devices, without the backend's INFO lines
    (and the CUDA build's no-driver line) when TF_CPP_MIN_LOG_LEVEL >= 1."""
    if "keras" in sys.modules:
        return
    level = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0")
    quiet = _native_info_lines_dropped() if level.isdigit() and int(level) >= 1 else contextlib.nullcontext()
    with quiet:
        import keras

        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            tf.config.list_physical_devices()  # the device search is what tries CUDA


def main(argv=None):
    """Runs one subcommand.

    Returns:
        0 on success; 2 with a one-line ``error:`` for a user error (:func:`is_user_error`; its
        traceback too with ``--verbose``); 1 with the traceback of any other error; 130 after Ctrl-C.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow loads: no INFO/WARNING lines of its C++ code
    args = build_parser().parse_args(argv)
    try:
        _import_keras()
        from keras_capsules.datasets.registry import command_line_spelling

        with command_line_spelling():
            return args.handler(args)
    except KeyboardInterrupt:
        message = getattr(args, "interrupted", "stopped")
        if getattr(args, "no_resume", False):
            message = "stopped; run it again without --no-resume to resume"
        print(f"\nkeras-capsules {args.command}: {message}.", file=sys.stderr)
        return 130
    except Exception as error:
        if not is_user_error(error):
            traceback.print_exception(error)
            print(
                f"keras-capsules {args.command}: unexpected {type(error).__name__} (traceback above); if it is not caused by "
                "your environment, please report it.",
                file=sys.stderr,
            )
            return 1
        if args.verbose:
            traceback.print_exception(error)
        print(f"keras-capsules {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
