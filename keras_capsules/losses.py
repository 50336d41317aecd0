"""Capsule-network losses (backend-agnostic ``keras.ops``)."""

import math

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.heads import class_mask
from keras_capsules.ops.normalize import l2_normalize
from keras_capsules.serialization import register


@register
class MarginLoss(keras.losses.Loss):
    """Margin loss of Sabour et al. (2017), summed over classes, averaged over the batch.

    ``L_k = T_k max(0, m+ - |v_k|)^2 + lambda (1 - T_k) max(0, |v_k| - m-)^2``.

    ``y_true`` is class indices ``(batch,)``/``(batch, 1)`` or one-/multi-hot ``(batch, classes)``;
    ``y_pred`` is the class-capsule lengths ``(batch, classes)``. Labels of another shape or batch
    size, and (eager) indices outside ``[0, classes)``, raise ``ValueError``; in a compiled graph an
    out-of-range index makes that example's loss NaN (see :func:`~keras_capsules.layers.heads.class_mask`).

    The official TF code (Sarasra) computes **half** of this (``0.5 * [...]``, written with
    logits - 0.5 and margin 0.4); pass ``scale=0.5`` for that. EscVM, XifengGuo and REM use the
    paper form (``scale=1``, the default).

    Args:
        m_plus: ``m+`` (0.9). m_minus: ``m-`` (0.1). lambda_: down-weighting of absent classes (0.5).
        scale: overall factor (1.0; the official code's value is 0.5).
    """

    def __init__(
        self,
        m_plus=0.9,
        m_minus=0.1,
        lambda_=0.5,
        scale=1.0,
        name="margin_loss",
        reduction="sum_over_batch_size",
        **kwargs,
    ):
        super().__init__(name=name, reduction=reduction, **kwargs)
        self.m_plus = float(m_plus)
        self.m_minus = float(m_minus)
        self.lambda_ = float(lambda_)
        self.scale = float(scale)

    def call(self, y_true, y_pred):
        y_pred = ops.cast(y_pred, "float32")
        targets = class_mask(self, "y_true", y_true, y_pred.shape[-1], "float32", batch=y_pred.shape[0])
        present = targets * ops.square(ops.relu(self.m_plus - y_pred))
        absent = self.lambda_ * (1.0 - targets) * ops.square(ops.relu(y_pred - self.m_minus))
        return self.scale * ops.sum(present + absent, axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update({"m_plus": self.m_plus, "m_minus": self.m_minus, "lambda_": self.lambda_, "scale": self.scale})
        return config


@register
class SupervisedContrastiveLoss(keras.losses.Loss):
    """Supervised contrastive loss (SupCon; Khosla et al. 2020, eq. 11 of Zeng et al. 2025), ``contrast_mode="all"``.

    For anchors ``i`` over all ``2N`` views, positives ``P(i)`` (other views with the same label) and
    all other views ``A(i)``::

        L_i = -(tau / tau_base) / |P(i)| * sum_{p in P(i)} log( exp(z_i.z_p / tau) / sum_{a in A(i)} exp(z_i.z_a / tau) )

    As in the reference implementation the projections are expected L2-normalised already (the
    GLOM head does it; ``normalize=True`` does it here) and logits are shifted by their row maximum.
    An anchor without positives contributes 0 (the reference gives NaN). With image indices as
    labels the loss is SimCLR's unsupervised NT-Xent.

    ``y_pred``: ``(batch, views, dim)`` (the reference layout; ``y_true`` then has one label per image,
    ``(batch,)``) or views already stacked along the batch, ``(batch * views, dim)`` with one label
    per row (the layout ``fit`` produces for a model run on concatenated views; the pairing of the
    views is not needed because they share their label). Returns per-anchor losses; with 3-D
    ``y_pred`` they are ordered view-major, so per-image sample weights do not apply.

    Args:
        temperature: ``tau`` (0.07). base_temperature: ``tau_base`` (``None``: ``temperature``; the
            reference's default 0.07 makes the factor 1). normalize: L2-normalise ``y_pred`` first.
    """

    def __init__(
        self,
        temperature=0.07,
        base_temperature=None,
        normalize=False,
        name="supervised_contrastive_loss",
        reduction="sum_over_batch_size",
        **kwargs,
    ):
        super().__init__(name=name, reduction=reduction, **kwargs)
        if not float(temperature) > 0:
            errors.fail(self, "temperature", "a positive float", temperature)
        self.temperature = float(temperature)
        self.base_temperature = None if base_temperature is None else float(base_temperature)
        self.normalize = bool(normalize)

    def call(self, y_true, y_pred):
        features = ops.cast(y_pred, "float32")
        labels = ops.reshape(ops.cast(y_true, "float32"), (-1,))
        if len(features.shape) == 3:
            views = features.shape[1]
            features = ops.reshape(ops.transpose(features, (1, 0, 2)), (-1, features.shape[-1]))
            labels = ops.tile(labels, [views])
        elif len(features.shape) != 2:
            errors.fail(
                self,
                "y_pred",
                "projections of shape (batch, views, dim) or (batch, dim)",
                f"shape {tuple(features.shape)}",
            )
        if self.normalize:
            features = l2_normalize(features)
        logits = ops.matmul(features, ops.transpose(features)) / self.temperature
        logits = logits - ops.stop_gradient(ops.max(logits, axis=1, keepdims=True))
        others = 1.0 - ops.eye(ops.shape(features)[0], dtype="float32")
        positives = ops.cast(ops.equal(labels[:, None], labels[None, :]), "float32") * others
        log_norm = ops.log(ops.maximum(ops.sum(ops.exp(logits) * others, axis=1, keepdims=True), 1e-30))
        count = ops.sum(positives, axis=1)
        mean_log_prob = ops.sum(positives * (logits - log_norm), axis=1) / ops.maximum(count, 1.0)
        base = self.temperature if self.base_temperature is None else self.base_temperature
        return ops.where(count > 0, -(self.temperature / base) * mean_log_prob, 0.0)

    def get_config(self):
        config = super().get_config()
        config.update(
            {"temperature": self.temperature, "base_temperature": self.base_temperature, "normalize": self.normalize}
        )
        return config


def reconstruction_loss(images, reconstructions, pixel_reduction="sum"):
    """Per-example squared reconstruction error.

    Args:
        images: ``(batch, *image_shape)`` targets in [0, 1].
        reconstructions: same shape.
        pixel_reduction: ``"sum"`` (Sabour: sum of squared errors) or ``"mean"`` (EscVM, XifengGuo: MSE).

    Returns:
        ``(batch,)`` float32. The paper weight is 0.0005 on the sum (= 0.392 on the mean for 784 pixels).
    """
    errors.check_one_of("reconstruction_loss", "pixel_reduction", pixel_reduction, ("sum", "mean"))
    diff = ops.square(ops.cast(images, "float32") - ops.cast(reconstructions, "float32"))
    axes = tuple(range(1, len(diff.shape)))
    return ops.sum(diff, axis=axes) if pixel_reduction == "sum" else ops.mean(diff, axis=axes)


#: Default (m_min, m_max, ramp_steps) of each spread-loss margin schedule.
SPREAD_SCHEDULES = {
    "linear": (0.2, 0.9, None),  # paper: 0.2 -> 0.9 linearly; the horizon is not given, so it is required
    "ibm": (
        0.2,
        0.99,
        50000,
    ),  # authors' OpenReview reply, IBM models.py: 0.2 + 0.79 * sigmoid(min(10, step/50000 - 4))
}


def spread_margin(step, schedule="ibm", m_min=None, m_max=None, ramp_steps=None):
    """Margin of the spread loss at training step ``step`` (a Python float).

    - ``"linear"`` (paper): ``m_min + (m_max - m_min) * min(1, step / ramp_steps)``, 0.2 -> 0.9;
      ``ramp_steps`` is required (the paper does not give the horizon).
    - ``"ibm"`` (authors' OpenReview reply, IBM ``models.py``):
      ``m_min + (m_max - m_min) * sigmoid(min(10, step / ramp_steps - 4))`` with 0.2, 0.99 and
      50000 steps (batch 64), i.e. ``0.2 + 0.79 * sigmoid(min(10, step / 50000 - 4))``.

    Args:
        step: the training step (0-based), a number.
        schedule: ``"linear"`` or ``"ibm"``.
        m_min, m_max, ramp_steps: override the schedule's defaults.
    """
    errors.check_one_of("spread_margin", "schedule", schedule, tuple(SPREAD_SCHEDULES))
    defaults = SPREAD_SCHEDULES[schedule]
    m_min = defaults[0] if m_min is None else float(m_min)
    m_max = defaults[1] if m_max is None else float(m_max)
    ramp_steps = defaults[2] if ramp_steps is None else ramp_steps
    if ramp_steps is None or not ramp_steps > 0:
        errors.fail("spread_margin", "ramp_steps", f"a positive number of steps for schedule={schedule!r}", ramp_steps)
    if schedule == "linear":
        return m_min + (m_max - m_min) * min(1.0, max(0.0, step / ramp_steps))
    return m_min + (m_max - m_min) / (1.0 + math.exp(-min(10.0, step / ramp_steps - 4.0)))


@register
class SpreadLoss(keras.losses.Loss):
    """Spread loss of matrix capsules with EM routing (Hinton et al. 2018, eq. 3; docs/reference/routers.md#em-routing).

    ``L = sum_{i != t} max(0, m - (a_t - a_i))^2`` per example, averaged over the batch (IBM's
    ``spread_loss``), where ``a`` are the class activations and ``t`` the target class.

    ``y_true`` is class indices ``(batch,)``/``(batch, 1)`` or one-hot ``(batch, classes)``, checked
    as in :class:`MarginLoss`; ``y_pred`` the class activations ``(batch, classes)``.

    The margin ``m`` is a non-trainable ``keras.Variable`` (:attr:`margin`) so a schedule can move it
    during training: pass :class:`SpreadMarginScheduler` (this loss, ``schedule="ibm"`` or
    ``"linear"``) to ``fit`` and it sets ``m`` from the step count before every batch. The loss reads
    the variable at every step under the TensorFlow backend (graph or eager ``fit``) and under any
    backend with ``run_eagerly=True``; a jit-compiled JAX ``fit`` reads it once when it traces the
    step, so use ``run_eagerly=True`` there (or recompile) for a moving margin.

    Args:
        margin: initial margin (0.2, the start of both schedules).
    """

    def __init__(self, margin=0.2, name="spread_loss", reduction="sum_over_batch_size", **kwargs):
        super().__init__(name=name, reduction=reduction, **kwargs)
        self.margin = keras.Variable(float(margin), trainable=False, dtype="float32", name="spread_margin")

    def call(self, y_true, y_pred):
        y_pred = ops.cast(y_pred, "float32")
        targets = class_mask(self, "y_true", y_true, y_pred.shape[-1], "float32", batch=y_pred.shape[0])
        target_score = ops.sum(targets * y_pred, axis=-1, keepdims=True)
        margin = ops.cast(self.margin, "float32")
        violations = ops.square(ops.relu(margin - (target_score - y_pred)))
        return ops.sum((1.0 - targets) * violations, axis=-1)

    def get_config(self):
        config = super().get_config()
        config["margin"] = float(ops.convert_to_numpy(self.margin))
        return config


def _scores_as_given(scores):
    """A copy of ``scores``: Keras's cross-entropies on TensorFlow read, instead of a tensor a sigmoid or softmax
    produced, that activation's input, cached on the tensor; the copy has no cache, so they read the scores."""
    return ops.copy(scores)


@register
class ScoresCrossentropy(keras.losses.SparseCategoricalCrossentropy):
    """Sparse categorical cross-entropy on ``(batch, classes)`` class scores, the same on every backend.

    Keras's own loss, on TensorFlow, replaces scores that a sigmoid or softmax produced by that activation's input
    (cached on the tensor; not on JAX or PyTorch, nor after a cast). Here ``from_logits=True`` takes the scores as
    the logits they are, whatever produced them (the variational-Bayes code's loss on its class activations).
    ``log_odds=True`` takes instead the log-odds ``log(p / (1 - p))`` of scores ``p`` in (0, 1) as the logits, ``p``
    clipped to ``[1e-7, 1 - 1e-7]`` (Heinsen's code's loss: its logits are the log-odds of the activations our
    model outputs). ``from_logits=False`` is Keras's loss on probabilities.

    ``y_true``: class indices ``(batch,)``; ``y_pred``: scores ``(batch, classes)``.

    Args:
        from_logits: whether the scores (or, with ``log_odds``, their log-odds) are logits.
        log_odds: whether the logits are the scores' log-odds (needs ``from_logits=True``).
    """

    def __init__(self, from_logits=False, log_odds=False, name="sparse_categorical_crossentropy", **kwargs):
        if log_odds and not from_logits:
            errors.fail("ScoresCrossentropy", "from_logits", "True with log_odds=True", from_logits)
        super().__init__(from_logits=from_logits, name=name, **kwargs)
        self.log_odds = bool(log_odds)

    def call(self, y_true, y_pred):
        if self.log_odds:
            p = ops.clip(ops.cast(y_pred, "float32"), 1e-7, 1.0 - 1e-7)
            y_pred = ops.log(p) - ops.log1p(-p)
        elif self.from_logits:
            y_pred = _scores_as_given(y_pred)
        return super().call(y_true, y_pred)

    def get_config(self):
        return {**super().get_config(), "log_odds": self.log_odds}


@register
class ScoresBinaryCrossentropy(keras.losses.Loss):
    """One-vs-all binary cross-entropy on ``(batch, classes)`` class scores, averaged over classes; the same on
    every backend.

    Each class is its own yes/no question: ``mean_k [-t_k log s(z_k) - (1 - t_k) log(1 - s(z_k))]`` with ``s`` the
    sigmoid, ``z`` the scores taken as logits (``from_logits=True``; a copy, so that Keras on TensorFlow does not
    read the input of a sigmoid that produced them instead, as :class:`ScoresCrossentropy` says) and ``t`` the
    targets. With ``from_logits=False`` the scores are probabilities in [0, 1] (``s(z)`` above).

    ``y_true``: class indices ``(batch,)`` / ``(batch, 1)`` (what the training pipelines give) or one-/multi-hot
    ``(batch, classes)``, checked as :class:`MarginLoss` checks them; ``y_pred``: scores ``(batch, classes)``.

    Args:
        from_logits: whether the scores are logits (else probabilities).
    """

    def __init__(self, from_logits=False, name="binary_crossentropy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.from_logits = bool(from_logits)

    def call(self, y_true, y_pred):
        scores = ops.cast(y_pred, "float32")
        targets = class_mask(self, "y_true", y_true, scores.shape[-1], "float32", batch=scores.shape[0])
        if self.from_logits:
            scores = _scores_as_given(scores)
        return ops.mean(ops.binary_crossentropy(targets, scores, from_logits=self.from_logits), axis=-1)

    def get_config(self):
        return {**super().get_config(), "from_logits": self.from_logits}


class SpreadMarginScheduler(keras.callbacks.Callback):
    """Sets a :class:`SpreadLoss` margin from the training step before every batch (see :func:`spread_margin`).

    The step count starts at the optimizer's ``iterations`` when training begins, so a resumed run
    continues the schedule.

    Args:
        loss: the :class:`SpreadLoss` passed to ``compile``.
        schedule, m_min, m_max, ramp_steps: as in :func:`spread_margin`.
    """

    def __init__(self, loss, schedule="ibm", m_min=None, m_max=None, ramp_steps=None):
        super().__init__()
        if not isinstance(loss, SpreadLoss):
            errors.fail("SpreadMarginScheduler", "loss", "a SpreadLoss instance", type(loss).__name__, TypeError)
        spread_margin(0, schedule, m_min, m_max, ramp_steps)  # validates the arguments now
        self.loss = loss
        self.schedule = schedule
        self.m_min, self.m_max, self.ramp_steps = m_min, m_max, ramp_steps
        self.step = 0

    def on_train_begin(self, logs=None):
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and getattr(optimizer, "iterations", None) is not None:
            self.step = int(ops.convert_to_numpy(optimizer.iterations))

    def on_train_batch_begin(self, batch, logs=None):
        self.loss.margin.assign(spread_margin(self.step, self.schedule, self.m_min, self.m_max, self.ramp_steps))
        self.step += 1
