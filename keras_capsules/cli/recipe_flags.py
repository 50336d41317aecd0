"""``train``'s recipe overrides: one flag per settable :class:`~keras_capsules.recipes.Recipe` field, and the overrides they give.

Read without importing the recipes (which import Keras): ``recipe_flags_test`` checks the table
against the Recipe's fields and types.
"""

import argparse

from keras_capsules.cli.options import key_values, none_or

#: The :class:`~keras_capsules.recipes.Recipe` fields settable from ``train``: field -> (value type, metavar, help).
#: A tuple type takes several values.
RECIPE_FLAGS = {
    "epochs": (int, "EPOCHS", "training epochs"),
    "batch_size": (int, "IMAGES", "images per training step"),
    "steps_per_epoch": (int, "STEPS", "optimizer steps per epoch, the data repeating ('none': one pass over the data)"),
    "optimizer": (str, "NAME", "adam, adamw or sgd"),
    "learning_rate": (float, "RATE", "initial learning rate (onecycle: the peak)"),
    "lr_schedule": (str, "NAME", "constant, exponential, step or onecycle"),
    "lr_decay": (float, "FACTOR", "exponential schedule: learning-rate factor per epoch (1: constant)"),
    "lr_decay_steps": (
        int,
        "STEPS",
        "exponential schedule: decay continuously, by --lr-decay every STEPS optimizer steps",
    ),
    "lr_floor": (float, "RATE", "exponential schedule: lowest learning rate (0: none)"),
    "lr_milestones": (
        tuple[int],
        "EPOCH",
        "step schedule: epochs after which the learning rate is multiplied by --lr-gamma",
    ),
    "lr_gamma": (float, "FACTOR", "step schedule: learning-rate factor at each milestone"),
    "momentum": (float, "COEFFICIENT", "SGD momentum coefficient"),
    "weight_decay": (float, "COEFFICIENT", "decoupled weight-decay coefficient, 'none' for off"),
    "loss": (
        str,
        "NAME",
        "margin, spread, crossentropy, log_odds_crossentropy, binary_crossentropy or a loss class name",
    ),
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
#: The repeatable KEY=VALUE flags and the Recipe field each sets.
_KEY_VALUE_FLAGS = (
    ("loss_arg", "loss_kwargs"),
    ("dataset_option", "dataset_options"),
    ("spread_arg", "spread_schedule"),
)


def add_recipe_flags(parser):
    """One ``--field-name`` flag per entry of :data:`RECIPE_FLAGS`, and the KEY=VALUE flags of the dictionary fields."""
    group = parser.add_argument_group(
        "recipe overrides",
        "Each default is the value of the recipe trained (`keras-capsules recipes` lists them); "
        "'none' clears an optional value.",
    )
    for field, (kind, metavar, text) in RECIPE_FLAGS.items():
        flag = "--" + field.replace("_", "-")
        help = f"{text} (default: the recipe's)"
        if getattr(kind, "__origin__", None) is tuple:
            group.add_argument(
                flag, nargs="*", type=kind.__args__[0], metavar=metavar, default=argparse.SUPPRESS, help=help
            )
        else:
            parse = none_or(kind) if field in OPTIONAL_RECIPE_FLAGS else kind
            group.add_argument(flag, type=parse, metavar=metavar, default=argparse.SUPPRESS, help=help)
    group.add_argument(
        "--augment", dest="augmentation", type=none_or(str), metavar="PRESET", default=argparse.SUPPRESS,
        help="alias of --augmentation (default: the recipe's)",
    )  # fmt: skip
    group.add_argument(
        "--stage-epochs", action="extend", nargs="+", metavar="STAGE=EPOCHS",
        help="epochs per stage of a two-stage recipe, e.g. `pretrain=20 classifier=5` for AgreementGLOM (default: --epochs for every stage)",
    )  # fmt: skip
    group.add_argument(
        "--loss-arg",
        action="append",
        metavar="KEY=VALUE",
        help="loss constructor argument, repeatable (default: the recipe's)",
    )
    group.add_argument(
        "--dataset-option",
        action="append",
        metavar="KEY=VALUE",
        help="dataset option, repeatable (default: the recipe's)",
    )
    group.add_argument(
        "--spread-arg",
        action="append",
        metavar="KEY=VALUE",
        help="spread-margin schedule argument, repeatable (default: the recipe's)",
    )


def recipe_overrides(args):
    """The Recipe fields the parsed ``args`` set: ``{field: value}``, tuples for the tuple fields, dictionaries for the KEY=VALUE flags."""
    overrides = {name: getattr(args, name) for name in RECIPE_FLAGS if hasattr(args, name)}
    for name, value in overrides.items():
        if isinstance(value, list):  # the tuple fields
            overrides[name] = tuple(value)
    for flag, field in _KEY_VALUE_FLAGS:
        if getattr(args, flag):
            overrides[field] = key_values(getattr(args, flag), "--" + flag.replace("_", "-"))
    return overrides
