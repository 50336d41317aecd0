"""The ``keras-capsules`` command line: ``train``, ``evaluate``, ``export``, ``recipes``, ``explain``, ``tune``.

Each subcommand is one ``add_<name>_command(commands)`` function that adds its parser and sets
``handler``; :data:`COMMANDS` lists them, so a new subcommand is one function and one list entry.
"""

import argparse
import ast
import dataclasses
import difflib
import json
import os
import sys
import typing


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


def _trained_on(model_file):
    """The dataset of the ``train`` run that wrote ``model_file`` (its ``metrics.json``), else the embedded sample."""
    from keras_capsules.training.evaluation import training_record

    return training_record(model_file).get("dataset") or "mnist_sample"


#: Recipe fields with their own flags elsewhere, or not meant to be set from the command line.
_RECIPE_SKIP = {"model", "dataset", "variant", "source", "model_kwargs", "dataset_options", "loss_kwargs", "spread_schedule", "stages", "pruning"}


def _add_recipe_flags(parser):
    """One ``--field-name`` flag per :class:`~keras_capsules.recipes.Recipe` field (typed from its annotation)."""
    from keras_capsules.recipes import Recipe

    hints = typing.get_type_hints(Recipe)
    group = parser.add_argument_group("recipe overrides (default: the paper recipe's value; 'none' clears optional values)")
    for field in dataclasses.fields(Recipe):
        if field.name in _RECIPE_SKIP:
            continue
        hint = hints[field.name]
        optional = type(None) in typing.get_args(hint)
        kind = next((a for a in typing.get_args(hint) if a is not type(None)), hint) if optional else hint
        flag = "--" + field.name.replace("_", "-")
        if kind is tuple:
            element = int if field.name == "lr_milestones" else str
            group.add_argument(flag, nargs="*", type=element, default=argparse.SUPPRESS, help=f"recipe field {field.name}")
        else:
            parse = _none_or(kind) if optional else kind
            group.add_argument(flag, type=parse, default=argparse.SUPPRESS, help=f"recipe field {field.name}")
    group.add_argument("--augment", dest="augmentation", type=_none_or(str), default=argparse.SUPPRESS, help="alias of --augmentation")
    group.add_argument("--loss-arg", action="append", metavar="KEY=VALUE", help="loss constructor argument (repeatable)")
    group.add_argument("--dataset-option", action="append", metavar="KEY=VALUE", help="dataset option (repeatable)")
    group.add_argument("--spread-arg", action="append", metavar="KEY=VALUE", help="spread-margin schedule argument (repeatable)")


def _train(args):
    from keras_capsules.recipes import Recipe
    from keras_capsules.training import train

    fields = {f.name for f in dataclasses.fields(Recipe)} - _RECIPE_SKIP
    overrides = {name: getattr(args, name) for name in fields if hasattr(args, name)}
    for name in ("lr_milestones", "eval_on", "metrics"):
        if name in overrides:
            overrides[name] = tuple(overrides[name])
    for flag, field in (("loss_arg", "loss_kwargs"), ("dataset_option", "dataset_options"), ("spread_arg", "spread_schedule")):
        if getattr(args, flag):
            overrides[field] = _key_values(getattr(args, flag), "--" + flag.replace("_", "-"))
    model_kwargs = _key_values(args.model_arg, "--model-arg")
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
        **overrides,
    )
    where = args.output or os.path.join("runs", f"{metrics['model']}-{metrics['dataset']}")
    scores = "; ".join(f"{split}: " + ", ".join(f"{k} {v:.4f}" for k, v in result.items()) for split, result in metrics["evaluations"].items())
    if metrics.get("already_complete"):
        print(
            f"\n{metrics['model']} on {metrics['dataset']}: this run was already complete ({metrics['epochs_completed']} epochs); "
            f"its stored result: {scores}. Outputs in {where} (--no-resume trains it again)."
        )
        return 0
    resumed = f", resumed after epoch {metrics['resumed_from_epoch']}" if metrics["resumed_from_epoch"] else ""
    if metrics["resumed_from_epoch"] and metrics["resumed_from_epoch"] >= metrics["epochs_completed"]:
        resumed = ", all trained by an earlier run; now evaluated and saved"
    print(
        f"\n{metrics['model']} on {metrics['dataset']} ({metrics['epochs_completed']} epochs{resumed}, "
        f"{metrics['train_seconds']:.0f} s training): {scores}. Outputs in {where}"
    )
    return 0


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
    train.add_argument("--dataset", default="mnist_sample", help="dataset name (default: the embedded MNIST sample)")
    train.add_argument("--recipe", default="default", help="recipe variant, e.g. rem or novel_azimuth (default: default)")
    train.add_argument("--strategy", default="default", choices=("default", "mirrored", "multi_worker"), help="tf.distribute strategy")
    train.add_argument("--router", help="router of the capsule layers, e.g. dynamic")
    train.add_argument("--routing-iterations", type=int, help="routing iterations")
    train.add_argument("--model-arg", action="append", metavar="KEY=VALUE", help="constructor argument (repeatable), e.g. reconstruction=False")
    train.add_argument("--data-dir", help="folder with the dataset's standard files")
    train.add_argument("--download", action="store_true", help="allow TFDS downloads")
    train.add_argument("--limit", type=int, help="use only the first N training examples")
    train.add_argument("--eval-limit", type=int, help="evaluate on the first N examples only")
    train.add_argument("--output", help="output folder (default runs/MODEL-DATASET)")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--no-resume", action="store_true", help="delete the checkpoints in the output folder and start over")
    train.add_argument("--no-export", action="store_true", help="skip the SavedModel export")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_recipe_flags(train)
    train.set_defaults(handler=_train, interrupted="stopped; run the same command to resume")


def _evaluate(args):
    from keras_capsules.training import evaluate
    from keras_capsules.training.evaluation import training_preset

    augment = training_preset(args.model_file) if args.augment == "auto" else None if args.augment.lower() == "none" else args.augment
    dataset = args.dataset or _trained_on(args.model_file)
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
    evaluate.add_argument("model_file", metavar="MODEL.keras")
    evaluate.add_argument(
        "--dataset", help="dataset name (default: the one it was trained on, from the metrics.json next to it; else the embedded MNIST sample)"
    )
    evaluate.add_argument("--split", default="test")
    evaluate.add_argument("--batch-size", type=int, default=64)
    evaluate.add_argument(
        "--augment",
        default="auto",
        help="preset whose evaluation transform to apply; 'auto' (default): the one in the metrics.json next to the model; 'none'",
    )
    evaluate.add_argument("--data-dir", help="folder with the dataset's standard files")
    evaluate.add_argument("--download", action="store_true", help="allow TFDS downloads")
    evaluate.add_argument("--limit", type=int, help="evaluate on the first N examples only")
    evaluate.add_argument("--dataset-option", action="append", metavar="KEY=VALUE", help="dataset option (repeatable)")
    evaluate.set_defaults(handler=_evaluate)


def _export(args):
    from keras_capsules.training import export_keras_file

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
    export.add_argument("model_file", metavar="MODEL.keras")
    export.add_argument(
        "output_dir", metavar="OUTPUT",
        help="savedmodel: a new folder (an existing non-empty one only with --overwrite); onnx/litert: a new file",
    )
    export.add_argument("--format", choices=("savedmodel", "onnx", "litert"), default="savedmodel", help="export format (default: savedmodel)")
    export.add_argument("--overwrite", action="store_true", help="replace an existing OUTPUT (never one that holds MODEL.keras)")
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
    listing.add_argument("model", nargs="?", help="only this model's recipes (any case)")
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
    from keras_capsules.training import load_model

    check_pictures(args.num_images)  # before the model and data are loaded, and before any folder is made

    dataset = args.dataset or _trained_on(args.model_file)
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
    explain.add_argument("model_file", metavar="MODEL.keras")
    explain.add_argument(
        "--dataset", help="dataset name (default: the one it was trained on, from the metrics.json next to it; else the embedded MNIST sample)"
    )
    explain.add_argument("--split", default="test")
    explain.add_argument("--data-dir", help="folder with the dataset's standard files")
    explain.add_argument("--download", action="store_true", help="allow TFDS downloads")
    explain.add_argument("--batch-size", type=int, default=100)
    explain.add_argument("--limit", type=int, help="use the first N examples only")
    explain.add_argument("--levels", type=int, default=11, help="K of REM's quantiser q_K (default 11)")
    explain.add_argument("--no-quantize", action="store_true", help="run the routers unquantised (keys are still binned)")
    explain.add_argument("--num-images", type=int, default=8, help="images that get saliency and parse-tree pictures (0: none, no matplotlib needed)")
    explain.add_argument("--dictionaries", action="store_true", help="include every parse-tree key and count in the JSON")
    explain.add_argument(
        "--output", help="output folder (default runs/explain-MODEL; runs/explain-RUN for the model.keras of a `train` run in folder RUN)"
    )
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
    tune.add_argument("--dataset", default="mnist_sample")
    tune.add_argument("--max-trials", type=int, default=5)
    tune.add_argument("--epochs", type=int, default=1, help="epochs per trial")
    tune.add_argument("--batch-size", type=int, help="default: the recipe's")
    tune.add_argument("--limit", type=int, help="use the first N training examples (the last 10%% validate)")
    tune.add_argument("--routers", help="comma-separated routers to search (default: the model's and dynamic)")
    tune.add_argument("--data-dir", help="folder with the dataset's standard files")
    tune.add_argument("--output", help="tuner folder (default runs/tune)")
    tune.add_argument("--seed", type=int, default=0)
    tune.add_argument("--overwrite", action="store_true", help="discard a previous search in the tuner folder (default: continue it)")
    tune.add_argument("--quiet", action="store_true")
    tune.set_defaults(handler=_tune, interrupted="stopped; run the same command to continue the search")


def _presets(args):
    from keras_capsules import presets

    if args.download:
        model, _, name = args.download.partition("/")
        print(f"downloaded to {presets.download(_model_name(model), name)}")
        return 0
    if args.card:
        model, _, name = args.card.partition("/")
        print(presets.model_card(_model_name(model), name), end="")
        return 0
    keys = presets.available(_model_name(args.model) if args.model else None)
    if not keys:
        print("no presets" + (f" for {args.model}" if args.model else ""))
        return 0
    print(f"{'weights=':34s} {'test accuracy':>22s} {'parameters':>11s}  file")
    for key in keys:
        model, name = key.split("/", 1)
        preset = presets.get(model, name)
        try:
            where = presets.locate(preset)
        except presets.PresetFileError:
            where = "not on this machine" + (" (--download)" if preset.url else "")
        accuracy = f"{100 * preset.test_accuracy:.2f} % {preset.dataset}"
        print(f"{model}(weights={name!r})".ljust(34) + f" {accuracy:>22s} {preset.parameters:>11,d}  {where}")
    return 0


def add_presets_command(commands):
    listing = commands.add_parser(
        "presets",
        help="list the pretrained weights (accuracy on the full test set, parameters, file)",
        description="Pretrained weights load with MODEL(weights=NAME); the accuracy is measured on the full official test "
        "set with the file that ships. Files are searched inside the package, then in $KERAS_CAPSULES_PRESETS, then in "
        "the Keras cache (~/.keras/keras_capsules).",
    )
    listing.add_argument("model", nargs="?", help="only this model's presets")
    listing.add_argument("--card", metavar="MODEL/NAME", help="print the model card of one preset (Markdown)")
    listing.add_argument("--download", metavar="MODEL/NAME", help="download a preset that has a URL into the Keras cache")
    listing.set_defaults(handler=_presets)


#: Subcommand builders, in help order.
COMMANDS = [add_train_command, add_evaluate_command, add_export_command, add_recipes_command, add_explain_command, add_tune_command, add_presets_command]


def build_parser():
    parser = argparse.ArgumentParser(prog="keras-capsules", description="Capsule networks and GLOM for Keras 3.")
    commands = parser.add_subparsers(dest="command", required=True)
    for add_command in COMMANDS:
        add_command(commands)
    return parser


def main(argv=None):
    """Runs one subcommand: 0 on success, 2 with a one-line ``error:`` for bad input, 130 after Ctrl-C."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = build_parser().parse_args(argv)
    from keras_capsules.datasets.registry import command_line_spelling

    try:
        with command_line_spelling():
            return args.handler(args)
    except (ValueError, TypeError, FileNotFoundError, ImportError) as error:
        print(f"keras-capsules {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        message = getattr(args, "interrupted", "stopped")
        if getattr(args, "no_resume", False):
            message = "stopped; run it again without --no-resume to resume"
        print(f"\nkeras-capsules {args.command}: {message}.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
