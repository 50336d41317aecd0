"""The model a run trains: built from its recipe (or a preset's backbone), its stages' trainable flags and compiled
stage models, and the memory plan of its first stage, made from shapes before anything is allocated."""

import keras

from keras_capsules import applications
from keras_capsules.applications import fine_tune
from keras_capsules.training import memory_plan, pruning, shape_plan
from keras_capsules.training.checkpoints import build_optimizer


def construct_model(recipe, classes, input_shape=None, **model_overrides):
    """The uncompiled application named by ``recipe.model`` (see :func:`build_model` for the arguments)."""
    constructor = getattr(applications, recipe.model, None)
    if constructor is None or not callable(constructor) or isinstance(constructor, type):
        raise ValueError(
            f"train: unknown model {recipe.model!r}; expected an application constructor name such as 'EffCapsNet'."
        )
    kwargs = {**recipe.model_kwargs, **{k: v for k, v in model_overrides.items() if v is not None}}
    kwargs.setdefault("classes", classes)
    if input_shape is not None:
        kwargs.setdefault("input_shape", tuple(input_shape))
    return constructor(**kwargs)


def build_model(recipe, classes, input_shape=None, steps_per_epoch=None, **model_overrides):
    """Builds and compiles the application named by ``recipe.model`` with the recipe's optimizer, loss and metrics.

    Call it inside ``strategy.scope()`` for distributed training. (Multi-stage recipes compile one
    model per stage: see :func:`stage_model`.)

    Args:
        recipe: a :class:`~keras_capsules.recipes.Recipe`.
        classes: number of classes (unless ``recipe.model_kwargs`` sets it).
        input_shape: image shape (unless ``recipe.model_kwargs`` sets it).
        steps_per_epoch: optimizer steps per epoch, for the learning-rate schedule.
        **model_overrides: constructor arguments replacing the recipe's (``None`` values are ignored).
    """
    model = construct_model(recipe, classes, input_shape, **model_overrides)
    model.compile(
        optimizer=recipe.make_optimizer(steps_per_epoch), loss=recipe.make_loss(), metrics=recipe.make_metrics()
    )
    return model


def set_stage_trainable(model, stage, frozen):
    """Freezes the layers with weights that ``stage.trainable`` does not name, and unfreezes those frozen by earlier stages.

    Layers are only touched when a stage asks for it, so a single-stage recipe keeps the model's own flags.

    Args:
        model: the model all stages share.
        stage: a :class:`~keras_capsules.recipes.base.Stage`.
        frozen: set of the layer names frozen by earlier stages; updated in place.
    """
    names = {layer.name for layer in model.layers}
    unknown = sorted(set(stage.trainable or ()) - names)
    if unknown:
        raise ValueError(
            f"train: stage {stage.name!r} field `trainable` expected layer names of model {model.name!r}, received {unknown}."
        )
    for layer in model.layers:
        train_it = stage.trainable is None or layer.name in stage.trainable
        if train_it and layer.name in frozen:
            layer.trainable = True
            frozen.discard(layer.name)
        elif not train_it and layer.weights and layer.trainable:
            layer.trainable = False
            frozen.add(layer.name)


def stage_model(model, stage, recipe, steps_per_epoch, build=True):
    """The compiled model one stage trains: ``model``, or ``model``'s inputs -> the output of layer ``stage.output``.

    Call :func:`set_stage_trainable` first (the optimizer is built for the trainable weights), inside
    ``strategy.scope()`` for distributed training.

    Args:
        model: the model all stages share.
        stage: a :class:`~keras_capsules.recipes.base.Stage`.
        recipe: the stage's single-stage recipe (``Recipe.stage_recipes``).
        steps_per_epoch: optimizer steps per epoch, for the learning-rate schedule.
        build: build the optimizer's variables now (not for a model built from shapes, which is only planned).
    """
    net = model
    if stage.output is not None:
        try:
            output = model.get_layer(stage.output).output
        except ValueError:
            raise ValueError(
                f"train: stage {stage.name!r} field `output` expected a layer name of model {model.name!r}, received {stage.output!r}."
            ) from None
        net = keras.Model(model.inputs, output, name=f"{model.name}_{stage.name}")
    optimizer = recipe.make_optimizer(steps_per_epoch)
    if recipe.pruning is not None:
        # Wrapped from the start (not by the callback), so every checkpoint holds the same optimizer structure.
        paths = [variable.path for variable in pruning.shrinkable_weights(net)]
        optimizer = pruning.LobsterOptimizer(optimizer, recipe.pruning.get("strength", 1e-4), variable_paths=paths)
    net.compile(optimizer=optimizer, loss=recipe.make_loss(), metrics=recipe.make_metrics())
    if build:
        build_optimizer(net)  # before the first traced step, which would otherwise build it and be traced twice
    return net


def network(recipe, weights, input_shape, classes):
    """``(model, tuned)``: the uncompiled application ``recipe`` trains for ``input_shape`` and ``classes``, from scratch
    (``tuned`` is ``None``) or with the backbone of preset ``weights`` (``tuned``: the
    :class:`~keras_capsules.applications.fine_tune.FineTuned` record)."""
    if weights is None:
        return construct_model(recipe, classes, input_shape), None
    architecture = {k: v for k, v in recipe.model_kwargs.items() if k not in ("input_shape", "classes")}
    tuned = fine_tune.fine_tune_model(recipe.model, weights, input_shape, classes, **architecture)
    return tuned.model, tuned


def first_stage(plan, done, offsets, start):
    """The index in ``plan`` (``[(stage, stage recipe)]``) of the first stage a run resumed after ``done`` epochs trains:
    from ``start`` (the stage of its checkpoint), the first not closed by it, else the last."""
    for index in range(start, len(plan)):
        if min(max(done - offsets[index], 0), plan[index][1].epochs) < plan[index][1].epochs:
            return index
    return len(plan) - 1


def plan_memory(
    recipe, weights, input_shape, classes, plan, index, steps_per_epoch, max_memory, verbose, recompute="auto"
):
    """The memory plan of training stage ``index`` of ``plan``, made on the model built from its shapes (nothing
    allocated: :mod:`~keras_capsules.training.shape_plan`), printed with ``verbose`` and checked.

    ``recompute``: ``"auto"`` plans without rematerialisation where that fits with room to spare
    (:func:`~keras_capsules.training.memory_plan.plan_fastest`), ``True`` or ``False`` plans as told; the
    plan's ``recompute`` says which the stage trains with.

    Raises:
        memory_plan.MemoryPlanError: the estimated peak exceeds ``max_memory`` (default: what the process
            can use), naming the largest batch that fits; raised before any weight is allocated.
    """
    with shape_plan.from_shapes():
        model, _ = network(recipe, weights, input_shape, classes)
        frozen = set()
        for stage, _ in plan[: index + 1]:
            set_stage_trainable(model, stage, frozen)
    stage, stage_recipe = plan[index]
    trained = stage_model(model, stage, stage_recipe, steps_per_epoch, build=False)

    def estimate(with_recompute):
        return memory_plan.estimate(
            trained, stage_recipe.batch_size * stage.views, steps_per_epoch=steps_per_epoch, recompute=with_recompute
        )

    if recompute == "auto":
        chosen = memory_plan.plan_fastest(estimate, max_memory)
    else:
        chosen = memory_plan.check(estimate(recompute), max_memory)
    if verbose:
        print(chosen.describe(), flush=True)
    return chosen
