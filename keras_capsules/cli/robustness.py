"""``keras-capsules robustness``: accuracy of a ``.keras`` model or a preset under rotation, scale, shear and translation,
or (``--attack fgsm|pgd``) under white-box L-infinity attacks per epsilon.

Imports neither Keras nor TensorFlow until the command runs (``keras-capsules --help`` stays fast).
"""

import argparse
import functools

from keras_capsules.cli.options import (
    BY_CLASS,
    DATA_DEFAULT,
    FOLDER_HELP,
    TRAINED_ON,
    add_model_argument,
    augment_option,
    dataset_for_model,
)

TRANSFORMS = ("rotation", "scale", "shear", "translation")
ATTACKS = ("fgsm", "pgd")
LOSSES = ("margin", "cross_entropy")


def training_loss(model):
    """``(loss object, source)``: the training loss of a preset (its recipe's last stage) or of a ``.keras`` file
    (the recipe in the ``metrics.json`` that ``train`` wrote beside it), or ``None`` when neither says."""
    from keras_capsules import presets, recipes

    key = presets.find(model)
    if key is not None:  # no TensorFlow needed (an accelerator machine with JAX or PyTorch alone)
        preset = presets.get(*key)
        return recipes.get(*preset.recipe).stage_recipes()[-1][1].make_loss(), "recipe " + "/".join(preset.recipe)
    from keras_capsules.training.evaluation import training_record  # the training package imports TensorFlow

    recipe = training_record(model).get("recipe")
    if not isinstance(recipe, dict) or not recipe.get("loss"):
        return None
    last = (recipe.get("stages") or [{}])[-1]
    name, kwargs = last.get("loss") or recipe["loss"], last.get("loss_kwargs") or recipe.get("loss_kwargs") or {}
    recorded = recipes.Recipe(
        model=recipe.get("model", "?"), dataset=recipe.get("dataset", "?"), loss=name, loss_kwargs=kwargs
    )
    return recorded.make_loss(), "metrics.json beside the model"


def _attack(args, dataset, split, augment):
    from keras_capsules import datasets
    from keras_capsules.evaluation.adversarial_accuracy import EPSILONS, report

    unused = [flag for flag, value in (("--transform", args.transform), ("--plot", args.plot)) if value]
    if args.attack == "fgsm":
        unused += [
            flag for flag, value in (("--pgd-steps", args.pgd_steps), ("--pgd-step-size", args.pgd_step_size)) if value
        ]
    if unused:
        raise ValueError(
            f"robustness: with --attack {args.attack}, {' and '.join(unused)} do not apply; received {unused}."
        )
    if augment is not None and datasets.get_augmentation(augment).evaluate is not None:
        raise ValueError(
            f"robustness: --attack expected a model that takes the images as they come, received one trained with "
            f"augmentation preset {augment!r}, whose evaluation transform the attack cannot differentiate (pass --augment none to attack it without)."
        )
    loss, source = args.loss, None
    if loss is None:
        loss, source = training_loss(args.model) or (None, None)
    report(
        args.model,
        dataset,
        split,
        args.attack,
        args.epsilons or EPSILONS,
        limit=args.limit,
        json_path=args.json,
        data_dir=args.data_dir,
        download=args.download,
        loss_source=source,
        loss=loss,
        steps=args.pgd_steps,
        step_size=args.pgd_step_size,
        random_start=args.random_start,
        batch_size=args.batch_size,
        seed=args.seed,
        cumulative=args.cumulative,
    )
    return 0


def _attack_flags(args):
    """The attack options given on the command line (they apply with ``--attack`` only)."""
    given = (
        ("--epsilons", args.epsilons),
        ("--pgd-steps", args.pgd_steps),
        ("--pgd-step-size", args.pgd_step_size),
        ("--random-start/--no-random-start", args.random_start is not None),
        ("--loss", args.loss),
        ("--cumulative", args.cumulative),
    )
    return [flag for flag, value in given if value]


def _robustness(args):
    from keras_capsules import presets
    from keras_capsules.evaluation.robustness import report

    key = presets.find(args.model)

    @functools.cache
    def open_model():
        opened = presets.open_model(args.model)
        if opened is None:
            raise ValueError(
                f"robustness: argument `MODEL` expected a .keras file or a preset, received {args.model!r}: no such file or preset."
            )
        return opened[0]

    dataset, split = dataset_for_model(
        "robustness", open_model, args.model, key, args.dataset, args.data_dir, args.split
    )
    augment = augment_option(args.augment, None if key else args.model)
    if args.attack is not None:
        return _attack(args, dataset, split, augment)
    if _attack_flags(args):
        raise ValueError(
            f"robustness: {', '.join(_attack_flags(args))} apply to an attack only; expected --attack fgsm or pgd "
            "with them, received no --attack."
        )
    batch_size = 256 if args.batch_size is None else args.batch_size
    options = dict(split=split, transforms=args.transform, limit=args.limit, batch_size=batch_size, seed=args.seed)
    report(
        args.model,  # opened again by its name, which names the results (a preset's key)
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
        help="accuracy under rotation, scale, shear and translation per magnitude, or under FGSM / PGD per epsilon",
        description="Evaluates MODEL.keras or a preset on deterministic rotated, scaled, sheared and translated copies of a dataset "
        "split (the same images for every model: the seed fixes each image's draw) and prints accuracy per transform and "
        "magnitude: rotation 0-60 degrees in 15-degree steps, scale 0.6-1.4, shear 0-0.4, translation 0-8 pixels. "
        "With --attack: accuracy under a white-box L-infinity attack (FGSM, or PGD) per epsilon, on images in [0, 1], "
        "attacking the model's training loss (a preset's recipe, the metrics.json beside a file) or --loss.",
    )
    add_model_argument(robustness)
    robustness.add_argument(
        "--dataset", metavar="NAME", help=f"dataset name (default: a preset's own dataset; for a file, {TRAINED_ON})"
    )
    robustness.add_argument("--split", default="test", help="split evaluated (default: test)")
    robustness.add_argument(
        "--transform", action="append", choices=TRANSFORMS, help="only this transform, repeatable (default: all four)"
    )
    robustness.add_argument(
        "--limit",
        type=int,
        metavar="IMAGES",
        help=f"evaluate on the first IMAGES images only{BY_CLASS} (default: all images)",
    )
    robustness.add_argument(
        "--batch-size", type=int, metavar="IMAGES",
        help="images per model call (default: 256); with --attack each call keeps the batch's activations for its "
        "gradient (about a quarter of a GB per image for ConsensusCapsNet with kernel or LSTM routing), and the default "
        "is planned: the largest batch up to 256 whose estimated peak fits in the memory available (TensorFlow)",
    )  # fmt: skip
    robustness.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the per-image signs and directions, or of PGD's random start (default: 0)",
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
    attack = robustness.add_argument_group("adversarial attacks")
    attack.add_argument(
        "--attack",
        choices=ATTACKS,
        help="instead of the transforms: accuracy under this attack per epsilon (default: none)",
    )
    attack.add_argument(
        "--epsilons",
        nargs="+",
        type=float,
        metavar="EPSILON",
        help="L-infinity radii in units of the [0, 1] image range (default: 0.05 0.1 0.2 0.3)",
    )
    attack.add_argument("--pgd-steps", type=int, metavar="STEPS", help="PGD's steps (default: 10)")
    attack.add_argument(
        "--pgd-step-size", type=float, metavar="SIZE", help="PGD's step (default: 2.5 epsilon / steps, per epsilon)"
    )
    attack.add_argument(
        "--random-start",
        action=argparse.BooleanOptionalAction,
        help="start from a uniform draw in the epsilon-ball, seeded by --seed (default: on for PGD, off for FGSM)",
    )
    attack.add_argument(
        "--cumulative",
        action="store_true",
        help="count an image as correct at an epsilon only if it was correct clean and withstood the attack at every "
        "epsilon up to it; each epsilon attacks only the images still standing, so it costs less (default: off, "
        "each epsilon on its own)",
    )
    attack.add_argument(
        "--loss",
        choices=LOSSES,
        help="loss attacked (default: the model's training loss: a preset's recipe, or the metrics.json beside a file; "
        "cross_entropy is on probabilities after a softmax, else on the outputs as logits)",
    )
    robustness.set_defaults(handler=_robustness)
