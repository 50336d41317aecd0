"""``keras-capsules recipes``: the registered paper recipes as ``train`` flags, with their sources.

Imports neither Keras nor TensorFlow until the command runs (``keras-capsules --help`` stays fast).
"""

from keras_capsules.cli.options import model_name


def _recipes(args):
    from keras_capsules import recipes

    for model, dataset, variant in recipes.available(args.model and model_name(args.model)):
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
