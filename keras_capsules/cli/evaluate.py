"""``keras-capsules evaluate``: loss and metrics of a ``.keras`` model (or accuracy of a preset) on a dataset split, as JSON.

Imports neither Keras nor TensorFlow until the command runs (``keras-capsules --help`` stays fast).
"""

import json

from keras_capsules.cli.options import (
    BY_CLASS,
    DATA_DEFAULT,
    FOLDER_HELP,
    TRAINED_ON,
    add_model_argument,
    augment_option,
    dataset_for_model,
    key_values,
    open_model,
)


def _evaluate(args):
    from keras_capsules.datasets import evaluation_dataset
    from keras_capsules.training import evaluate

    model, key = open_model("evaluate", args.model_file)
    augment = augment_option(args.augment, None if key else args.model_file)
    dataset, split = dataset_for_model(
        "evaluate", lambda: model, args.model_file, key, args.dataset, args.data_dir, args.split
    )
    dataset = evaluation_dataset(dataset, split, args.data_dir)
    results = evaluate(
        model,
        dataset,
        split=split,
        batch_size=args.batch_size,
        data_dir=args.data_dir,
        download=args.download,
        limit=args.limit,
        augment=augment,
        **key_values(args.dataset_option, "--dataset-option"),
    )
    print(
        json.dumps(
            {"model": args.model_file, "dataset": dataset, "split": split, "augment": augment, **results}, indent=2
        )
    )
    return 0


def add_evaluate_command(commands):
    evaluate = commands.add_parser(
        "evaluate",
        help="evaluate a .keras model or a preset on a dataset split",
        description="Evaluates MODEL.keras on a dataset split (with the evaluation transform it was trained with) and prints "
        "loss and metrics as JSON; a preset (MODEL/NAME, or a preset folder) prints its accuracy.",
    )
    add_model_argument(evaluate, "model_file")
    evaluate.add_argument(
        "--dataset",
        metavar="NAME",
        help=f"dataset name; 'affnist|affine_mnist' is affNIST when its files are present, else the generated affine_mnist (default: a preset's own dataset; for a file, {TRAINED_ON})",
    )
    evaluate.add_argument("--split", default="test", help="split evaluated (default: test)")
    evaluate.add_argument(
        "--batch-size", type=int, default=64, metavar="IMAGES", help="images per step (default: 64 images)"
    )
    evaluate.add_argument(
        "--augment",
        default="auto",
        metavar="PRESET",
        help="preset whose evaluation transform to apply, or 'none' (default: auto, the one in the metrics.json next to the model)",
    )
    evaluate.add_argument(
        "--data-dir",
        metavar="FOLDER",
        help=f"with --dataset: the folder with its standard files (default: {DATA_DEFAULT}); {FOLDER_HELP}",
    )
    evaluate.add_argument("--download", action="store_true", help="allow TFDS downloads (default: off)")
    evaluate.add_argument(
        "--limit", type=int, metavar="IMAGES", help=f"evaluate on the first IMAGES images only{BY_CLASS} (default: all)"
    )
    evaluate.add_argument(
        "--dataset-option", action="append", metavar="KEY=VALUE", help="dataset option, repeatable (default: none)"
    )
    evaluate.set_defaults(handler=_evaluate)
