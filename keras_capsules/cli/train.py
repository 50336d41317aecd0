"""``keras-capsules train``: train an application with its paper recipe, evaluate, save and export; rerunning resumes.

Imports neither Keras nor TensorFlow until the command runs (``keras-capsules --help`` stays fast).
"""

import os

from keras_capsules.cli.options import (
    BY_CLASS,
    DATA_DEFAULT,
    add_folder_options,
    folder_dataset,
    key_values,
    memory_size,
    model_name,
)
from keras_capsules.cli.recipe_flags import add_recipe_flags, recipe_overrides

#: The dataset trained on without --dataset: the MNIST sample embedded in the package.
DEFAULT_DATASET = "mnist_sample"


def training_dataset(dataset, data_dir, image_size=None, channels=None, drop_empty_classes=False):
    """The dataset ``train`` trains on, from its ``--dataset``, ``--data-dir``, ``--image-size`` and ``--channels`` values.

    Returns:
        ``dataset`` when given (``data_dir`` is then where its standard files are searched); else, with
        ``data_dir``, that folder of images registered as a dataset (:func:`~keras_capsules.cli.options.folder_dataset`,
        an error when it holds no class subfolders); else :data:`DEFAULT_DATASET`.
    """
    if dataset is None and data_dir is not None:
        return folder_dataset("train", data_dir, image_size, channels, drop_empty_classes)
    if image_size is not None or channels is not None or drop_empty_classes:
        raise ValueError(
            "train: arguments `--image-size`, `--channels` and `--drop-empty-classes` expected --data-dir FOLDER of images "
            "without --dataset, received them without."
        )
    return dataset or DEFAULT_DATASET


def _train(args):
    from keras_capsules.training import train
    from keras_capsules.training.train import default_output

    dataset = training_dataset(args.dataset, args.data_dir, args.image_size, args.channels, args.drop_empty_classes)
    overrides = recipe_overrides(args)
    model_kwargs = key_values(args.model_arg, "--model-arg")
    stage_epochs = key_values(args.stage_epochs, "--stage-epochs")
    if args.router:
        model_kwargs["router"] = args.router
    if args.routing_iterations:
        model_kwargs["routing_iterations"] = args.routing_iterations
    metrics = train(
        model=model_name(args.model),
        dataset=dataset,
        output=args.output,
        data_dir=args.data_dir,
        limit=args.limit,
        seed=args.seed,
        verbose=2 if args.quiet else 1,
        export=not args.no_export,
        variant=args.recipe,
        download=args.download,
        strategy=args.strategy,
        resume=not args.no_resume,
        eval_limit=args.eval_limit,
        model_kwargs=model_kwargs,
        validation_examples=args.validation_examples,
        stage_epochs=stage_epochs,
        weights=args.weights,
        freeze_backbone_epochs=args.freeze_backbone_epochs,
        memory_check="only" if args.dry_run else "check",
        max_memory=args.max_memory,
        recompute={"auto": "auto", "on": True, "off": False}[args.recompute],
        **overrides,
    )
    if metrics.get("dry_run"):
        plan = metrics["plan"]
        print(
            f"\nDry run: nothing trained or written{'' if plan else ' (every epoch of this run is already trained)'}."
        )
        return 0
    where = args.output or default_output(metrics["model"], metrics["dataset"])

    scores = "; ".join(
        f"{split}: " + ", ".join(f"{k} {v:.4f}" for k, v in result.items())
        for split, result in metrics["evaluations"].items()
    )
    scores = scores or "no split evaluated (--eval-on without a split)"
    if metrics.get("already_complete"):
        print(
            f"\n{metrics['model']} on {metrics['dataset']}: this run was already complete ({_epochs(metrics['epochs_completed'])}); "
            f"its stored result: {scores}. Outputs in {where} (--no-resume trains it again)."
        )
        return _save_preset(args.save_preset, where, metrics)
    resumed = f", resumed after epoch {metrics['resumed_from_epoch']}" if metrics["resumed_from_epoch"] else ""
    if metrics["resumed_from_epoch"] and metrics["resumed_from_epoch"] >= metrics["epochs_completed"]:
        resumed = ", all trained by an earlier run; now evaluated and saved"
    print(
        f"\n{metrics['model']} on {metrics['dataset']} ({_epochs(metrics['epochs_completed'])}{resumed}, "
        f"{metrics['train_seconds']:.0f} s training): {scores}. Outputs in {where}"
    )
    return _save_preset(args.save_preset, where, metrics)


def _save_preset(folder, where, metrics):
    """With ``--save-preset FOLDER``: the run's ``model.keras`` written as a preset folder, with the run's metrics on its card."""
    if folder:
        from keras_capsules import presets
        from keras_capsules.saving import load_model

        saved = presets.save(load_model(os.path.join(where, "model.keras")), folder, metrics=metrics, overwrite=True)
        print(f"Preset folder {saved}: load it with presets.load({saved!r}) or {metrics['model']}(weights={saved!r}).")
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
    train.add_argument(
        "--dataset", metavar="NAME", help=f"dataset name (default: {DEFAULT_DATASET}, the embedded MNIST sample)"
    )
    train.add_argument(
        "--recipe",
        default="default",
        metavar="VARIANT",
        help="recipe variant, e.g. rem or novel_azimuth (default: default)",
    )
    train.add_argument(
        "--strategy",
        default="default",
        choices=("default", "mirrored", "multi_worker"),
        help="tf.distribute strategy (default: default)",
    )
    train.add_argument(
        "--router", metavar="NAME", help="router of the capsule layers, e.g. dynamic (default: the recipe's)"
    )
    train.add_argument(
        "--routing-iterations", type=int, metavar="ITERATIONS", help="routing iterations (default: the recipe's)"
    )
    train.add_argument(
        "--model-arg", action="append", metavar="KEY=VALUE",
        help="constructor argument, repeatable, e.g. reconstruction=False (default: the recipe's)",
    )  # fmt: skip
    train.add_argument(
        "--data-dir", metavar="FOLDER",
        help=f"with --dataset: the folder with its standard files (default: {DATA_DEFAULT}); without --dataset: a folder of your own "
        "images, one subfolder per class (or train/ and test/ holding them), trained with the model's generic recipe",
    )  # fmt: skip
    add_folder_options(train)
    train.add_argument(
        "--drop-empty-classes", action="store_true",
        help="with --data-dir FOLDER of images: train without the class folders that hold no readable image (default: "
        "such a class is an error naming it)",
    )  # fmt: skip
    train.add_argument(
        "--save-preset", metavar="FOLDER",
        help="also write the trained model as a preset folder (configuration, weights, class names, preprocessing, a model card "
        "with this run's metrics) that presets.load(FOLDER) and MODEL(weights=FOLDER) read (default: none)",
    )  # fmt: skip
    train.add_argument(
        "--weights", metavar="PRESET",
        help="fine-tune from this preset of MODEL (e.g. mnist) or a preset folder of MODEL (written by --save-preset): its "
        "backbone, new class capsules for the data's classes (default: none, from scratch)",
    )  # fmt: skip
    train.add_argument(
        "--freeze-backbone-epochs", type=int, default=0, metavar="EPOCHS",
        help="with --weights: train only the new layers for the first EPOCHS of the epochs (default: 0)",
    )  # fmt: skip
    train.add_argument("--download", action="store_true", help="allow TFDS downloads (default: off)")
    train.add_argument(
        "--limit",
        type=int,
        metavar="IMAGES",
        help=f"train on the first IMAGES training images only{BY_CLASS} (default: all)",
    )
    train.add_argument(
        "--eval-limit",
        type=int,
        metavar="IMAGES",
        help=f"evaluate on the first IMAGES images only{BY_CLASS} (default: all)",
    )
    train.add_argument(
        "--validation-examples", type=int, metavar="IMAGES",
        help="images of the training split held out for validation after every epoch; 0 turns validation off "
        "(default: the recipe's, else min(5000, a tenth of the training images))",
    )  # fmt: skip
    train.add_argument("--output", metavar="FOLDER", help="output folder (default: runs/MODEL-DATASET)")
    train.add_argument(
        "--seed", type=int, default=0, help="random seed of weights, shuffling and augmentation (default: 0)"
    )
    train.add_argument(
        "--no-resume",
        action="store_true",
        help="delete the checkpoints in the output folder and start over (default: resume)",
    )
    train.add_argument("--no-export", action="store_true", help="skip the SavedModel export (default: export)")
    train.add_argument(
        "--quiet", action="store_true",
        help="no progress bar: one line per epoch with its losses and validation accuracy; the folder summary and the "
        "memory plan are still printed (default: a progress bar per epoch)",
    )  # fmt: skip
    train.add_argument(
        "--dry-run", action="store_true",
        help="print the training plan (parameters, estimated peak memory of a step and its parts, steps per epoch) and stop "
        "(default: print it, then train)",
    )  # fmt: skip
    train.add_argument(
        "--max-memory", type=memory_size, metavar="SIZE",
        help="refuse to start when a training step's estimated peak memory exceeds SIZE, e.g. 8GB or 512MB, naming the "
        "largest batch that fits (default: the memory available to the process)",
    )  # fmt: skip
    train.add_argument(
        "--recompute", choices=("auto", "on", "off"), default="auto",
        help="rematerialisation of convolutional capsule layers and of the kernel, LSTM and EM routers in training "
        "(less memory, more time): auto trains without it when the memory plan finds that the step fits with room to "
        "spare (default: auto)",
    )  # fmt: skip
    add_recipe_flags(train)
    train.set_defaults(handler=_train, interrupted="stopped; run the same command to resume")
