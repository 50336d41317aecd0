"""The recipe a ``train()`` call runs: the paper's (or the generic one for a folder of images) with the call's
overrides, checked model arguments, and the frozen-backbone stage of a fine-tuning run."""

import dataclasses
import inspect

from keras_capsules import applications, errors, recipes
from keras_capsules.applications import fine_tune


def check_model_arguments(model, kwargs):
    """Raises a ``ValueError`` naming the arguments in ``kwargs`` that application ``model``'s constructor does not take."""
    constructor = getattr(applications, model, None)
    if not callable(constructor) or isinstance(constructor, type):
        return  # construct_model reports the unknown model
    parameters = inspect.signature(constructor).parameters
    unknown = sorted(set(kwargs) - set(parameters))
    if unknown and not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        raise ValueError(
            f"train: {model} has no constructor argument {', '.join(map(repr, unknown))} (from model_kwargs, the CLI's "
            f"--model-arg, or a keyword that is not a recipe field); its arguments: {', '.join(parameters)}."
        )


def fine_tuning_stages(recipe, weights, freeze_backbone_epochs):
    """``recipe`` with a first stage that trains only the new layers for ``freeze_backbone_epochs`` of its epochs (none: unchanged)."""
    if not freeze_backbone_epochs:
        return recipe
    if weights is None:
        raise ValueError(
            f"train: argument `freeze_backbone_epochs` expected 0 without `weights` (there is no pretrained backbone to freeze), received {freeze_backbone_epochs!r}."
        )
    if recipe.stages or not errors.is_integer(freeze_backbone_epochs) or not 0 < freeze_backbone_epochs < recipe.epochs:
        raise ValueError(
            f"train: argument `freeze_backbone_epochs` expected an integer in 1..{recipe.epochs - 1} (fewer than the {recipe.epochs} "
            f"epochs, on a single-stage recipe), received {freeze_backbone_epochs!r}"
            + (" with a multi-stage recipe" if recipe.stages else "")
            + "."
        )
    new_layers = tuple(fine_tune.new_layer_names(recipe.model, weights, **recipe.model_kwargs))
    stages = (
        recipes.Stage("frozen_backbone", epochs=int(freeze_backbone_epochs), trainable=new_layers),
        recipes.Stage("fine_tune", epochs=recipe.epochs - int(freeze_backbone_epochs)),
    )
    return dataclasses.replace(recipe, stages=stages)


def resolve_recipe(
    model, dataset, variant, replacements, overrides, model_kwargs, validation_examples, stage_epochs=None
):
    """Recipe resolution: ``recipes.get(model, dataset, variant)`` with the run's overrides, its model arguments checked.

    Args:
        replacements: ``{"epochs", "batch_size", "learning_rate"}`` (``None`` keeps the recipe's value).
        overrides: :func:`train`'s ``**overrides``: recipe fields replace the recipe's (``None`` included),
            the others are constructor arguments.
        model_kwargs: constructor arguments, over the overrides.
        validation_examples: the hold-out size (``None`` keeps the recipe's).
        stage_epochs: ``{stage name: epochs}`` of a multi-stage recipe, over ``replacements["epochs"]``.

    Returns:
        The :class:`~keras_capsules.recipes.Recipe` the run trains and ``metrics.json`` records.
    """
    recipe_fields = {field.name for field in dataclasses.fields(recipes.Recipe)}
    recipe_overrides = {k: v for k, v in overrides.items() if k in recipe_fields}
    model_overrides = {**{k: v for k, v in overrides.items() if k not in recipe_fields}, **(model_kwargs or {})}
    recipe = recipes.for_dataset(model, dataset, variant).replace(**replacements)
    recipe = dataclasses.replace(recipe, **recipe_overrides)  # explicit values, None included (e.g. augmentation=None)
    recipe = dataclasses.replace(
        recipe, model_kwargs={**recipe.model_kwargs, **model_overrides}
    )  # metrics.json records the run
    if validation_examples is not None:
        recipe = dataclasses.replace(recipe, validation_examples=validation_examples)
    recipe = recipe.with_stage_epochs(stage_epochs)
    check_model_arguments(recipe.model, recipe.model_kwargs)
    return recipe
