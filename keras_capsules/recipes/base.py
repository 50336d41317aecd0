"""The :class:`Recipe` record and the recipe registry."""

import dataclasses
import math
from typing import Optional

import keras

from keras_capsules import errors

_RECIPES = {}

OPTIMIZERS = ("adam", "adamw", "sgd")
#: ``LobsterPruning`` arguments a recipe's ``pruning`` dict may set (besides ``validation_examples``).
PRUNING_ARGUMENTS = (
    "strength",
    "decay",
    "min_strength",
    "threshold_every",
    "start_epoch",
    "tolerance",
    "max_search_steps",
)
SCHEDULES = ("constant", "exponential", "step", "onecycle")
#: Short loss names -> (class name in ``keras_capsules.losses`` or ``keras.losses``, default kwargs).
LOSS_ALIASES = {
    "margin": ("MarginLoss", {}),
    "spread": ("SpreadLoss", {}),
    "crossentropy": ("ScoresCrossentropy", {"from_logits": True}),
    "log_odds_crossentropy": ("ScoresCrossentropy", {"from_logits": True, "log_odds": True}),
    "binary_crossentropy": ("ScoresBinaryCrossentropy", {"from_logits": True}),
}


@dataclasses.dataclass(frozen=True)
class Stage:
    """One stage of a multi-stage :class:`Recipe` (e.g. GLOM: contrastive pre-training, then the head).

    Every stage trains the same model object (so the final model is the constructor's) with a fresh
    optimizer built from the recipe (its schedule spans the stage's epochs). ``None`` fields take the
    recipe's value.

    Attributes:
        name: stage name (history keys of all stages but the last are prefixed with ``<name>_``).
        epochs: epochs of the stage (``None``: the recipe's ``epochs``, so ``--epochs`` sets every stage).
        output: name of the layer whose output this stage trains (``None``: the model's output).
        trainable: names of the layers trained in this stage; every other layer with weights is frozen
            (``None``: the model's own trainable flags).
        views: augmented views per image; with ``views > 1`` a batch of ``B`` images becomes
            ``B * views`` rows (an image's views adjacent) with the label repeated (SupCon).
        loss, loss_kwargs, metrics: as the recipe's fields.
    """

    name: str
    epochs: Optional[int] = None
    output: Optional[str] = None
    trainable: Optional[tuple] = None
    views: int = 1
    loss: Optional[str] = None
    loss_kwargs: Optional[dict] = None
    metrics: Optional[tuple] = None


@dataclasses.dataclass(frozen=True)
class Recipe:
    """One paper's training configuration for a (model, dataset) pair.

    Attributes:
        model: application constructor name, e.g. ``"EffCapsNet"``.
        dataset: dataset name understood by ``keras_capsules.datasets.load``.
        variant: recipe name when a pair has several (``"default"``; e.g. ``"rem"``, ``"novel_azimuth"``).
        model_kwargs: constructor arguments (variant, reconstruction, ...) added to, or replacing,
            those of ``configuration``; ``input_shape`` and ``classes`` come from the data unless
            given here.
        dataset_options: options of ``datasets.load`` (derived sets: ``pairs_per_image``, ``shift``, ...).
        train_split: split trained on.
        eval_on: splits evaluated after training: ``"split"`` or ``"dataset:split"`` (e.g. ``"affnist:test"``;
            ``"affnist|affine_mnist:test"``: affNIST when its files are present, see ``datasets.evaluation_dataset``);
            ``()`` evaluates nothing (the first phase of a longer schedule, which must not read the test set).
        optimizer: ``"adam"``, ``"adamw"`` or ``"sgd"``.
        learning_rate: initial (``"onecycle"``: peak) learning rate.
        lr_schedule: ``"constant"``, ``"exponential"`` (``lr * lr_decay**(epoch)``, floored at
            ``lr_floor``; or continuous ``lr * lr_decay**(step / lr_decay_steps)`` when
            ``lr_decay_steps`` is set), ``"step"`` (``lr * lr_gamma**k`` after the k-th of
            ``lr_milestones`` epochs) or ``"onecycle"`` (PyTorch ``OneCycleLR`` defaults, approximated
            by Keras' ``CosineDecay`` with a linear warm-up over 30% of the steps; the learning rate
            only: ``OneCycleLR`` also cycles the first moment's beta between 0.95 and 0.85, which
            stays at the optimizer's 0.9 here).
        lr_decay, lr_decay_steps, lr_floor, lr_milestones, lr_gamma: schedule parameters.
        momentum, weight_decay: optimizer options (SGD momentum; Keras' decoupled weight decay).
        loss: ``"margin"``, ``"spread"``, ``"crossentropy"`` (sparse, the scores as logits:
            :class:`~keras_capsules.losses.ScoresCrossentropy`), ``"log_odds_crossentropy"`` (sparse, on the
            log-odds of scores in (0, 1)), ``"binary_crossentropy"`` (one-vs-all, the scores as logits:
            :class:`~keras_capsules.losses.ScoresBinaryCrossentropy`), or a loss class name of
            ``keras_capsules.losses`` / ``keras.losses``.
        loss_kwargs: loss constructor arguments.
        spread_schedule: :class:`~keras_capsules.losses.SpreadMarginScheduler` arguments (spread loss only).
        metrics: compile metrics: names or Keras metric config dicts.
        batch_size, epochs: as in the paper.
        steps_per_epoch: fixed steps per epoch (the training data repeats), or ``None`` for one pass.
        augmentation: name of an augmentation preset (``keras_capsules.datasets.available_augmentations()``).
        source: where the values come from.
        pruning: REM's pruning (``keras_capsules.training.pruning.LobsterPruning``) during training:
            ``None``, or a dict of ``LobsterPruning`` arguments plus ``validation_examples`` (the size
            of the hold-out the threshold search reads when ``validation_examples`` is ``None``; REM:
            5,500, its last training images, where the library draws the run's validation hold-out).
            The optimizer is wrapped in ``LobsterOptimizer`` from the start, so checkpoints resume
            with its state.
        validation_examples: size of the validation hold-out drawn from ``train_split``
            (:mod:`keras_capsules.datasets.holdout`); ``None``: ``min(5,000, N // 10)``; ``0``: none.
        stages: :class:`Stage` records of a multi-stage recipe, trained in order by ``train`` with
            checkpoints and resume across stages (``()``: one stage with the fields above).
        configuration: the registered application configuration trained (a name of
            ``keras_capsules.applications.list_configurations()`` whose constructor is ``model``, e.g.
            ``"EffCapsNet/mnist-reconstruction"``); its arguments are filled into ``model_kwargs``
            under those given there.
    """

    model: str
    dataset: str
    model_kwargs: dict = dataclasses.field(default_factory=dict)
    optimizer: str = "adam"
    learning_rate: float = 1e-3
    lr_decay: float = 1.0
    lr_floor: float = 0.0
    momentum: float = 0.0
    weight_decay: Optional[float] = None
    loss: str = "margin"
    batch_size: int = 128
    epochs: int = 50
    augmentation: Optional[str] = None
    source: str = ""
    variant: str = "default"
    dataset_options: dict = dataclasses.field(default_factory=dict)
    train_split: str = "train"
    eval_on: tuple = ("test",)
    lr_schedule: str = "exponential"
    lr_decay_steps: Optional[int] = None
    lr_milestones: tuple = ()
    lr_gamma: float = 0.1
    loss_kwargs: dict = dataclasses.field(default_factory=dict)
    spread_schedule: dict = dataclasses.field(default_factory=lambda: {"schedule": "ibm"})
    metrics: tuple = ("accuracy",)
    steps_per_epoch: Optional[int] = None
    stages: tuple = ()
    configuration: Optional[str] = None
    pruning: Optional[dict] = None
    validation_examples: Optional[int] = None

    def __post_init__(self):
        where = f"Recipe({self.model!r}, {self.dataset!r})"
        if self.pruning is not None:
            allowed = {"validation_examples", *PRUNING_ARGUMENTS}
            if not isinstance(self.pruning, dict) or set(self.pruning) - allowed:
                raise ValueError(
                    f"{where}: field `pruning` expected None or a dict with keys from {sorted(allowed)}, received {self.pruning!r}."
                )
        if self.configuration is not None:
            from keras_capsules import applications

            entry = applications.get_configuration(self.configuration)
            if entry.constructor.__name__ != self.model:
                raise ValueError(
                    f"{where}: field `configuration` expected a configuration of {self.model}, received {self.configuration!r} "
                    f"(a configuration of {entry.constructor.__name__})."
                )
            # The configuration's arguments are part of the recipe's model arguments (frozen record: set once here).
            object.__setattr__(self, "model_kwargs", {**entry.kwargs, **self.model_kwargs})
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"{where}: field `optimizer` expected one of {OPTIMIZERS}, received {self.optimizer!r}.")
        if self.lr_schedule not in SCHEDULES:
            raise ValueError(
                f"{where}: field `lr_schedule` expected one of {SCHEDULES}, received {self.lr_schedule!r}."
            )
        for field in ("batch_size", "epochs"):
            value = getattr(self, field)
            if not errors.is_integer(value) or value < 1:
                raise ValueError(f"{where}: field `{field}` expected a positive integer, received {value!r}.")
            object.__setattr__(self, field, int(value))  # NumPy integers too, stored as Python ints (JSON)
        if not self.learning_rate > 0:
            raise ValueError(
                f"{where}: field `learning_rate` expected a positive number, received {self.learning_rate!r}."
            )
        if self.lr_floor and self.lr_decay_steps:
            raise ValueError(
                f"{where}: field `lr_floor` works with per-epoch decay only; received lr_decay_steps={self.lr_decay_steps!r}."
            )
        names = [getattr(stage, "name", None) for stage in self.stages]
        if not all(isinstance(stage, Stage) for stage in self.stages) or len(set(names)) != len(names):
            raise ValueError(
                f"{where}: field `stages` expected Stage records with distinct names, received {self.stages!r}."
            )
        if self.stages and self.stages[-1].output is not None:
            raise ValueError(
                f"{where}: the last stage trains the model itself; expected output=None, received {self.stages[-1].output!r}."
            )
        for stage in self.stages:
            epochs_ok = stage.epochs is None or (errors.is_integer(stage.epochs) and stage.epochs >= 1)
            if not epochs_ok or not errors.is_integer(stage.views) or stage.views < 1:
                raise ValueError(
                    f"{where}: stage {stage.name!r} expected positive integer `epochs` (or None) and `views`, "
                    f"received epochs={stage.epochs!r}, views={stage.views!r}."
                )

    def replace(self, **changes):
        """A copy with ``changes`` applied (``None`` values are ignored, so CLI defaults pass through)."""
        changes = {k: v for k, v in changes.items() if v is not None}
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(
                f"Recipe.replace: unknown fields {sorted(unknown)}; fields: {sorted(f.name for f in dataclasses.fields(self))}."
            )
        return dataclasses.replace(self, **changes)

    def with_stage_epochs(self, stage_epochs):
        """A copy whose stages train for ``stage_epochs[name]`` epochs (``{"pretrain": 20, "classifier": 5}``).

        Stages not named keep theirs (``None``: the recipe's ``epochs``). Raises ValueError for a
        single-stage recipe or a name that is not one of its stages.
        """
        if not stage_epochs:
            return self
        names = [stage.name for stage in self.stages]
        unknown = sorted(set(stage_epochs) - set(names))
        if not self.stages or unknown:
            raise ValueError(
                f"Recipe {self.model}/{self.dataset}/{self.variant}: `stage_epochs` expected stage names among {names}, "
                f"received {sorted(stage_epochs)}"
                + ("" if self.stages else " (a single-stage recipe: use `epochs`)")
                + "."
            )
        stages = tuple(
            dataclasses.replace(stage, epochs=stage_epochs.get(stage.name, stage.epochs)) for stage in self.stages
        )
        return dataclasses.replace(self, stages=stages)

    def stage_recipes(self):
        """``[(stage, recipe), ...]`` in training order, each ``recipe`` a single-stage copy with the stage's
        epochs, loss and metrics (one ``(Stage("train"), self)`` pair for a single-stage recipe)."""
        if not self.stages:
            return [(Stage("train"), self)]
        result = []
        for stage in self.stages:
            fields = {
                "epochs": stage.epochs,
                "loss": stage.loss,
                "loss_kwargs": stage.loss_kwargs,
                "metrics": stage.metrics,
            }
            result.append(
                (stage, dataclasses.replace(self, stages=(), **{k: v for k, v in fields.items() if v is not None}))
            )
        return result

    def learning_rate_at(self, epoch):
        """The learning rate during epoch ``epoch`` (0-based) of the per-epoch schedules."""
        if self.lr_schedule == "step":
            return self.learning_rate * self.lr_gamma ** sum(epoch >= m for m in self.lr_milestones)
        if self.lr_schedule == "exponential" and not self.lr_decay_steps:
            return max(self.learning_rate * self.lr_decay**epoch, self.lr_floor)
        if self.lr_schedule == "constant":
            return self.learning_rate
        raise ValueError(
            f"Recipe.learning_rate_at: the {self.lr_schedule!r} schedule is per step; use make_schedule(steps_per_epoch)(step)."
        )

    def make_schedule(self, steps_per_epoch=None):
        """The learning rate: a float, or a built-in Keras ``LearningRateSchedule`` of the optimizer step.

        Built-in schedules keep ``.keras`` files loadable without importing this module, and a schedule
        of the step continues exactly when training resumes with the restored optimizer.

        Args:
            steps_per_epoch: optimizer steps per epoch, needed by the per-epoch and one-cycle schedules;
                without it those give the constant initial learning rate (``train`` always passes it).
        """
        schedules = keras.optimizers.schedules
        if self.lr_schedule == "constant" or (self.lr_schedule == "exponential" and self.lr_decay == 1.0):
            return float(self.learning_rate)
        if self.lr_schedule == "exponential" and self.lr_decay_steps:
            return schedules.ExponentialDecay(self.learning_rate, self.lr_decay_steps, self.lr_decay, staircase=False)
        if steps_per_epoch is None:
            return float(self.learning_rate)  # per-epoch schedules need the epoch length: constant initial rate
        if not errors.is_integer(steps_per_epoch) or steps_per_epoch < 1:
            raise ValueError(
                f"Recipe.make_schedule: argument `steps_per_epoch` expected a positive integer for the {self.lr_schedule!r} "
                f"schedule, received {steps_per_epoch!r}."
            )
        steps_per_epoch = int(steps_per_epoch)  # a NumPy integer would reach the schedule's config
        if self.lr_schedule == "exponential" and not self.lr_floor:
            return schedules.ExponentialDecay(self.learning_rate, steps_per_epoch, self.lr_decay, staircase=True)
        # The optimizer evaluates the schedule at `iterations` before each update, so epoch e starts at step
        # e * steps_per_epoch; PiecewiseConstantDecay switches once `step > boundary`, hence the - 1 below.
        if self.lr_schedule == "exponential":
            # Piecewise constant up to the epoch where the floor is reached (ExponentialDecay has no floor).
            last = max(1, math.ceil(math.log(self.lr_floor / self.learning_rate) / math.log(self.lr_decay)))
            return schedules.PiecewiseConstantDecay(
                [e * steps_per_epoch - 1 for e in range(1, last + 1)],
                [self.learning_rate_at(e) for e in range(last + 1)],
            )
        if self.lr_schedule == "step":
            milestones = sorted(self.lr_milestones)
            if not milestones:
                return float(self.learning_rate)
            return schedules.PiecewiseConstantDecay(
                [m * steps_per_epoch - 1 for m in milestones],
                [self.learning_rate * self.lr_gamma**k for k in range(len(milestones) + 1)],
            )
        total = self.epochs * steps_per_epoch
        warmup = max(1, int(0.3 * total))
        return schedules.CosineDecay(
            self.learning_rate / 25.0,
            max(1, total - warmup),
            alpha=1.0 / 25.0 / 1e4,
            warmup_target=self.learning_rate,
            warmup_steps=warmup,
        )

    def make_optimizer(self, steps_per_epoch=None):
        """A fresh Keras optimizer for this recipe with its learning-rate schedule (see :meth:`make_schedule`)."""
        learning_rate = self.make_schedule(steps_per_epoch)
        if self.optimizer == "adam":
            return keras.optimizers.Adam(learning_rate)
        if self.optimizer == "adamw":
            return keras.optimizers.AdamW(learning_rate, weight_decay=self.weight_decay or 0.0)
        return keras.optimizers.SGD(learning_rate, momentum=self.momentum, weight_decay=self.weight_decay)

    def make_loss(self):
        """The recipe's loss object."""
        from keras_capsules import losses

        name, defaults = LOSS_ALIASES.get(self.loss, (self.loss, {}))
        cls = getattr(losses, name, None) or getattr(keras.losses, name, None)
        if not (isinstance(cls, type) and issubclass(cls, keras.losses.Loss)):
            raise ValueError(
                f"Recipe: field `loss` expected one of {sorted(LOSS_ALIASES)} or a loss class name of keras_capsules.losses / "
                f"keras.losses, received {self.loss!r}."
            )
        return cls(**{**defaults, **self.loss_kwargs})

    def make_metrics(self):
        """Compile metrics: strings pass through (``"accuracy"`` is resolved by ``compile``), dicts are deserialised."""
        return [keras.metrics.deserialize(m) if isinstance(m, dict) else m for m in self.metrics]

    def make_callbacks(self, loss):
        """Callbacks the recipe needs besides the schedule (the spread loss's margin schedule)."""
        from keras_capsules import losses

        if isinstance(loss, getattr(losses, "SpreadLoss", ())):
            return [losses.SpreadMarginScheduler(loss, **self.spread_schedule)]
        return []

    def evaluations(self):
        """``[(dataset, split), ...]`` from :attr:`eval_on`."""
        return [tuple(item.split(":", 1)) if ":" in item else (self.dataset, item) for item in self.eval_on]


def register_recipe(recipe):
    """Registers ``recipe`` under ``(recipe.model, recipe.dataset, recipe.variant)``."""
    key = (recipe.model, recipe.dataset, recipe.variant)
    if key in _RECIPES:
        raise ValueError(f"register_recipe: a recipe for {key} is already registered.")
    _RECIPES[key] = recipe
    return recipe


def available(model=None):
    """Registered ``(model, dataset, variant)`` triples, sorted (only ``model``'s when given)."""
    return sorted(key for key in _RECIPES if model is None or key[0] == model)


def get(model, dataset, variant="default"):
    """The recipe for ``model`` on ``dataset`` (``variant`` selects among several).

    Raises:
        ValueError: naming the registered recipes of ``model`` when there is none.
    """
    key = (model, dataset, variant)
    if key not in _RECIPES:
        registered = available(model) or available()
        raise ValueError(
            f"recipes.get: no recipe for model {model!r} on dataset {dataset!r} (variant {variant!r}); registered: {registered}."
        )
    return _RECIPES[key]
