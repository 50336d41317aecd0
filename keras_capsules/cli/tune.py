"""``keras-capsules tune``: a keras-tuner random search over router, iterations, capsule sizes and learning rate.

Imports neither Keras nor TensorFlow until the command runs (``keras-capsules --help`` stays fast).
"""

from keras_capsules.cli.options import (
    BY_CLASS,
    DATA_DEFAULT,
    add_folder_options,
    folder_dataset,
    model_name,
)


def _tune(args):
    from keras_capsules.tuning import tune

    routers = args.routers.split(",") if args.routers else None
    dataset = args.dataset or "mnist_sample"
    if args.dataset is None and args.data_dir is not None:
        dataset = folder_dataset("tune", args.data_dir, args.image_size, args.channels)
    elif args.image_size is not None or args.channels is not None:
        raise ValueError(
            "tune: --image-size and --channels expected --data-dir FOLDER of your images without --dataset, "
            f"received them with --dataset {dataset}."
        )
    tuner, best = tune(
        model_name(args.model),
        dataset,
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
    tune.add_argument(
        "--dataset",
        metavar="NAME",
        help="dataset name (default: mnist_sample, the embedded MNIST sample; with --data-dir, that folder of images)",
    )
    tune.add_argument(
        "--max-trials", type=int, default=5, metavar="TRIALS", help="trials of the random search (default: 5 trials)"
    )
    tune.add_argument("--epochs", type=int, default=1, help="training epochs per trial (default: 1 epoch)")
    tune.add_argument(
        "--batch-size", type=int, metavar="IMAGES", help="images per training step (default: the recipe's)"
    )
    tune.add_argument(
        "--limit", type=int, metavar="IMAGES",
        help=f"use the first IMAGES training images{BY_CLASS}, the last 10%% of them validating (a folder: each "
        "class's share) (default: all)",
    )  # fmt: skip
    tune.add_argument(
        "--routers", metavar="NAMES", help="comma-separated routers to search (default: the model's and dynamic)"
    )
    tune.add_argument(
        "--data-dir",
        metavar="FOLDER",
        help=f"with --dataset: the folder with its standard files (default: {DATA_DEFAULT}); without --dataset: a "
        "folder of your own images, one subfolder per class (or train/ and test/ holding them), searched with the "
        "model's generic recipe",
    )
    add_folder_options(tune)
    tune.add_argument("--output", metavar="FOLDER", help="tuner folder (default: runs/tune)")
    tune.add_argument("--seed", type=int, default=0, help="random seed of the search and the trials (default: 0)")
    tune.add_argument(
        "--overwrite", action="store_true", help="discard a previous search in the tuner folder (default: continue it)"
    )
    tune.add_argument("--quiet", action="store_true", help="no progress bars (default: progress bars)")
    tune.set_defaults(handler=_tune, interrupted="stopped; run the same command to continue the search")
