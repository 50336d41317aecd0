"""``keras-capsules explain``: the REM report of a ``.keras`` model or a preset (routing entropy, parse trees, saliency and parse-tree pictures).

Imports neither Keras nor TensorFlow until the command runs (``keras-capsules --help`` stays fast).
"""

import os

from keras_capsules.cli.options import (
    BY_CLASS,
    DATA_DEFAULT,
    FOLDER_HELP,
    TRAINED_ON,
    add_model_argument,
    dataset_for_model,
    open_model,
)


def _explain_folder(model_file, key):
    """``runs/explain-<name>``: the run folder's name for a ``train`` run's ``model.keras``, else the file's, the
    preset folder's or the preset's (``explain-EffCapsNet-mnist``)."""
    from keras_capsules.training.evaluation import training_record

    if key is not None:
        return os.path.join("runs", "explain-" + "-".join(key))
    folder, name = os.path.split(os.path.abspath(model_file))
    if name == "model.keras" and training_record(model_file):
        return os.path.join("runs", "explain-" + os.path.basename(folder))
    return os.path.join("runs", "explain-" + os.path.splitext(name)[0])


def _explain(args):
    from keras_capsules import datasets
    from keras_capsules.interpret import explain
    from keras_capsules.interpret.coupling import fits_input, routing_layer_names
    from keras_capsules.interpret.explain import check_pictures

    check_pictures(args.num_images)  # before the model and data are loaded, and before any folder is made

    model, key = open_model("explain", args.model_file)
    try:
        routing_layer_names(model)
    except ValueError:
        raise ValueError(
            f"explain: {args.model_file} has no routed capsule layer (FcCaps, ConvCaps, ConcurrentRouting), which "
            "REM's report reads; a GLOM model's views are interpret.plot_islands and interpret.plot_arrows."
        ) from None
    dataset, split = dataset_for_model(
        "explain", lambda: model, args.model_file, key, args.dataset, args.data_dir, args.split
    )
    data = datasets.load(
        dataset,
        split,
        batch_size=args.batch_size,
        data_dir=args.data_dir,
        download=args.download,
        limit=args.limit,
        shuffle=False,
    )
    received = tuple(data.element_spec[0].shape[1:])
    if not fits_input(model, received):
        raise ValueError(
            f"explain: {args.model_file} takes images of shape {tuple(model.inputs[0].shape[1:])}, but {dataset!r} "
            f"({split}) gives {received}; "
            "pass --dataset NAME, or --data-dir FOLDER with your images (read at the model's input size)."
        )
    output = args.output or _explain_folder(args.model_file, key)
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
        f"{args.model_file} on {dataset} ({split}, {report['num_samples']} images, K={args.levels}): accuracy {accuracy}, "
        f"routing entropy {report['entropy_mean']:.3f} +- {report['entropy_std']:.3f} bits, {report['num_trees_total']} parse trees. "
        f"Wrote entropy.json and {len(report['files'])} picture{'' if len(report['files']) == 1 else 's'} to {output}"
        + (f" (saliency {report['saliency']})" if "saliency" in report else "")
    )
    if "note" in report:
        print(f"explain: note: {report['note']}")
    return 0


def add_explain_command(commands):
    explain = commands.add_parser(
        "explain",
        help="REM report of a .keras model or a preset: routing entropy and parse trees (JSON), saliency and parse-tree PNGs",
        description="Writes the REM report of MODEL.keras: entropy.json (routing entropy, parse trees) and, with matplotlib, "
        "saliency.png and parse_tree_<i>.png.",
    )
    add_model_argument(explain, "model_file")
    explain.add_argument(
        "--dataset", metavar="NAME", help=f"dataset name (default: a preset's own dataset; for a file, {TRAINED_ON})"
    )
    explain.add_argument("--split", default="test", help="split read (default: test)")
    explain.add_argument(
        "--data-dir",
        metavar="FOLDER",
        help=f"with --dataset: the folder with its standard files (default: {DATA_DEFAULT}); {FOLDER_HELP}",
    )
    explain.add_argument("--download", action="store_true", help="allow TFDS downloads (default: off)")
    explain.add_argument(
        "--batch-size", type=int, default=100, metavar="IMAGES", help="images per step (default: 100 images)"
    )
    explain.add_argument(
        "--limit", type=int, metavar="IMAGES", help=f"use the first IMAGES images only{BY_CLASS} (default: all)"
    )
    explain.add_argument(
        "--levels", type=int, default=11, help="K of REM's quantiser q_K, in quantisation levels (default: 11 levels)"
    )
    explain.add_argument(
        "--no-quantize",
        action="store_true",
        help="run the routers unquantised; keys are still binned (default: quantised)",
    )
    explain.add_argument(
        "--num-images", type=int, default=8, metavar="IMAGES",
        help="images that get saliency and parse-tree pictures; 0: none, no matplotlib needed (default: 8 images)",
    )  # fmt: skip
    explain.add_argument(
        "--dictionaries",
        action="store_true",
        help="include every parse-tree key and count in the JSON (default: counts only)",
    )
    explain.add_argument(
        "--output", metavar="FOLDER",
        help="output folder (default: runs/explain-MODEL; runs/explain-RUN for the model.keras of a `train` run in folder RUN)",
    )  # fmt: skip
    explain.set_defaults(handler=_explain)
