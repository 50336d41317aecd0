"""``keras-capsules robustness``: accuracy of a ``.keras`` model or a preset under rotation, scale, shear and translation.

Imports neither Keras nor TensorFlow until the command runs (``keras-capsules --help`` stays fast).
"""

from keras_capsules.cli.options import (
    DATA_DEFAULT,
    FOLDER_HELP,
    TRAINED_ON,
    augment_option,
    folder_for_model,
    trained_on,
)

TRANSFORMS = ("rotation", "scale", "shear", "translation")


def _robustness(args):
    from keras_capsules import presets
    from keras_capsules.evaluation.robustness import report

    key = presets.find(args.model)
    model, split = args.model, args.split
    if args.dataset is None and args.data_dir is not None:
        opened = presets.open_model(args.model)
        if opened is None:
            raise ValueError(
                f"robustness: argument `MODEL` expected a .keras file or a preset, received {args.model!r}: no such file or preset."
            )
        model = opened[0]
        dataset, split = folder_for_model("robustness", args.data_dir, model, split)
    else:
        dataset = args.dataset or (presets.get(*key).dataset if key else trained_on(args.model))
    options = dict(split=split, transforms=args.transform, limit=args.limit, batch_size=args.batch_size, seed=args.seed)
    augment = augment_option(args.augment, None if key else args.model)
    report(
        model,
        dataset,
        data_dir=args.data_dir,
        download=args.download,
        augment=augment,
        plot=args.plot,
        json_path=args.json,
        **options,
    )
    return 0


def add_robustness_command(commands):
    robustness = commands.add_parser(
        "robustness",
        help="accuracy under rotation, scale, shear and translation, per magnitude",
        description="Evaluates MODEL.keras or a preset on deterministic rotated, scaled, sheared and translated copies of a dataset "
        "split (the same images for every model: the seed fixes each image's draw) and prints accuracy per transform and "
        "magnitude: rotation 0-60 degrees in 15-degree steps, scale 0.6-1.4, shear 0-0.4, translation 0-8 pixels.",
    )
    robustness.add_argument(
        "model",
        metavar="MODEL.keras|PRESET",
        help="a .keras file or a preset MODEL/NAME or MODEL:NAME (e.g. EffCapsNet/mnist)",
    )
    robustness.add_argument(
        "--dataset", metavar="NAME", help=f"dataset name (default: a preset's own dataset; for a file, {TRAINED_ON})"
    )
    robustness.add_argument("--split", default="test", help="split evaluated (default: test)")
    robustness.add_argument(
        "--transform", action="append", choices=TRANSFORMS, help="only this transform, repeatable (default: all four)"
    )
    robustness.add_argument(
        "--limit", type=int, metavar="IMAGES", help="evaluate on the first IMAGES images only (default: all images)"
    )
    robustness.add_argument(
        "--batch-size", type=int, default=256, metavar="IMAGES", help="images per model call (default: 256 images)"
    )
    robustness.add_argument(
        "--seed", type=int, default=0, help="seed of the per-image signs and directions (default: 0)"
    )
    robustness.add_argument(
        "--augment",
        default="auto",
        metavar="PRESET",
        help="augmentation preset whose evaluation transform follows the geometric one, or 'none' "
        "(default: auto, the one recorded in the metrics.json next to a model file; none for a preset)",
    )
    robustness.add_argument(
        "--data-dir",
        metavar="FOLDER",
        help=f"with --dataset: the folder with its standard files (default: {DATA_DEFAULT}); {FOLDER_HELP}",
    )
    robustness.add_argument("--download", action="store_true", help="allow TFDS downloads (default: off)")
    robustness.add_argument(
        "--plot",
        metavar="FILE.png",
        help="also draw accuracy against magnitude per transform to this PNG (default: no plot)",
    )
    robustness.add_argument("--json", metavar="FILE.json", help="also write the result as JSON (default: none)")
    robustness.set_defaults(handler=_robustness)
