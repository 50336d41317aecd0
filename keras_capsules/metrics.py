"""Metrics (backend-agnostic ``keras.ops``), as functions on a batch and as Keras ``Metric`` classes.

Sections:

- GLOM islands of agreement: :func:`tv_n` (paper eq. 13), :func:`tv_n_code` (the reference code's
  variant), :class:`TVn`.
- Routing (REM, Renzulli et al.): :func:`routing_entropy` (eq. 14), :class:`RoutingEntropy`
  (per-class parse-tree entropies and their mean, eq. 15, accumulated over batches).
"""

import keras
import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.serialization import register

# ---------------------------------------------------------------------------------------------------
# GLOM islands of agreement (Zeng et al., eq. 13; ALGORITHMS.md §9.8)
# ---------------------------------------------------------------------------------------------------


def _unit(x, epsilon=1e-12):
    x = ops.cast(x, "float32")
    return x * ops.rsqrt(ops.maximum(ops.sum(ops.square(x), axis=-1, keepdims=True), epsilon))


def _check_embeddings(where, embeddings):
    if len(embeddings.shape) not in (3, 4):
        errors.fail(where, "embeddings", "a tensor (batch, N, d) or (batch, N, levels, d)", f"shape {tuple(embeddings.shape)}")


def tv_n(embeddings):
    """``TV_n`` of eq. 13: the variance over positions of the L2-normalised column embeddings.

    ``f'_i = f_i / ||f_i||``, ``mu = mean_i f'_i``, ``TV_n = 1/(N d) sum_i sum_j (f'_ij - mu_j)^2``.
    Low values mean the columns agree (islands); 0 when all columns point the same way. Despite the
    paper's "total variation" citation this is a variance, not a sum of neighbour differences (see
    :func:`tv_n_code`).

    Args:
        embeddings: ``(batch, N, d)`` one level, or ``(batch, N, levels, d)`` all levels.

    Returns:
        ``(batch,)`` or ``(batch, levels)`` float32 (average over the batch yourself).
    """
    _check_embeddings("tv_n", embeddings)
    unit = _unit(embeddings)
    mean = ops.mean(unit, axis=1, keepdims=True)
    return ops.mean(ops.square(unit - mean), axis=(1, -1))


def tv_n_code(embeddings, grid_shape=None):
    """The reference code's "TV" (``torchmetrics.total_variation`` on L2-normalised embeddings / (N d)).

    Per example: ``sum |f'(r+1, c) - f'(r, c)| + sum |f'(r, c+1) - f'(r, c)|`` over the ``h x w`` grid
    and all channels, divided by ``N d``. The code evaluates it on the **CAE outputs** of the last
    iteration (``GlomColumns(..., return_agreement=True)``), bottom and top level, averaged over the
    batch. It measures neighbour differences (total variation), unlike eq. 13 (:func:`tv_n`).

    Args:
        embeddings: ``(batch, N, d)`` or ``(batch, N, levels, d)``, columns in row-major grid order.
        grid_shape: ``(h, w)``; ``None`` means a square grid.

    Returns:
        ``(batch,)`` or ``(batch, levels)`` float32.
    """
    from keras_capsules.layers.glom._utils import resolve_grid

    _check_embeddings("tv_n_code", embeddings)
    num, dim = embeddings.shape[1], embeddings.shape[-1]
    h, w = resolve_grid("tv_n_code", "grid_shape", num, grid_shape)
    unit = _unit(embeddings)
    grid = ops.reshape(unit, (-1, h, w) + tuple(unit.shape[2:]))
    vertical = ops.sum(ops.abs(grid[:, 1:] - grid[:, :-1]), axis=(1, 2, -1))
    horizontal = ops.sum(ops.abs(grid[:, :, 1:] - grid[:, :, :-1]), axis=(1, 2, -1))
    return (vertical + horizontal) / float(num * dim)


@register
class TVn(keras.metrics.Metric):
    """Running mean of ``TV_n`` for one GLOM level (eq. 13, or the code's variant).

    ``update_state(embeddings)`` or, inside ``compile``, ``update_state(y_true, embeddings)`` (the
    labels are ignored). ``embeddings`` is ``(batch, N, d)`` or ``(batch, N, levels, d)``; ``level``
    picks one level of the latter. Use one metric per level.

    Args:
        level: level index for 4-D inputs (-1: the top level).
        variant: ``"paper"`` (eq. 13, :func:`tv_n`) or ``"code"`` (:func:`tv_n_code`).
        grid_shape: ``(h, w)`` for ``variant="code"``; ``None`` means square.
    """

    def __init__(self, level=-1, variant="paper", grid_shape=None, name="tv_n", dtype=None):
        super().__init__(name=name, dtype=dtype)
        if isinstance(level, bool) or not isinstance(level, int):
            errors.fail(self, "level", "an integer level index", level, TypeError)
        self.level = level
        self.variant = errors.check_one_of(self, "variant", variant, ("paper", "code"))
        self.grid_shape = None if grid_shape is None else tuple(int(g) for g in grid_shape)
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred=None, sample_weight=None):
        embeddings = y_true if y_pred is None else y_pred
        embeddings = ops.convert_to_tensor(embeddings)
        if len(embeddings.shape) == 4:
            embeddings = ops.take(embeddings, self.level % embeddings.shape[2], axis=2)
        values = tv_n(embeddings) if self.variant == "paper" else tv_n_code(embeddings, self.grid_shape)
        if sample_weight is None:
            sample_weight = ops.ones_like(values)
        sample_weight = ops.reshape(ops.cast(sample_weight, "float32"), (-1,))
        self.total.assign_add(ops.cast(ops.sum(values * sample_weight), self.dtype))
        self.count.assign_add(ops.cast(ops.sum(sample_weight), self.dtype))

    def result(self):
        return ops.divide_no_nan(self.total, self.count)

    def reset_state(self):
        self.total.assign(0.0)
        self.count.assign(0.0)

    def get_config(self):
        config = super().get_config()
        config.update({"level": self.level, "variant": self.variant, "grid_shape": self.grid_shape})
        return config


# ---------------------------------------------------------------------------------------------------
# Routing metrics
# ---------------------------------------------------------------------------------------------------


def routing_entropy(counts, base=2.0):
    """Entropy of one class's parse-tree counts, ``H_j = -sum p log_base p`` with ``p = count / total`` (REM eq. 14).

    Args:
        counts: the counts of each distinct parse tree (a sequence, or a ``{key: count}`` dict).
        base: logarithm base (REM: 2, i.e. bits).

    Returns:
        A float; 0.0 for a single tree or no counts.

    Example:
        >>> routing_entropy([2, 1, 1])   # p = 1/2, 1/4, 1/4
        1.5
    """
    values = np.asarray(list(counts.values()) if isinstance(counts, dict) else list(counts), dtype="float64")
    if values.size and (values < 0).any():
        errors.fail("routing_entropy", "counts", "non-negative counts", float(values.min()))
    total = values.sum()
    if total <= 0:
        return 0.0
    p = values[values > 0] / total
    return float((p * np.log(1.0 / p)).sum() / np.log(base))


class RoutingEntropy:
    """REM's routing entropy over a dataset: per-class parse-tree dictionaries filled batch by batch.

    ``update_state(coupling, scores)`` adds a batch: the last routing layer's (quantised) coupling
    ``(batch, in_caps, classes)`` (e.g. ``routing_trace(model, x).last.coupling``) and the scores
    ``(batch, classes)`` or predicted classes ``(batch,)``. ``result()`` is the mean over predicted
    classes of the entropy of each class's parse trees (eq. 15); ``class_entropies()`` and
    ``num_trees()`` give the per-class values.

    Not a ``keras.metrics.Metric``: its state is an unbounded dictionary of string keys, kept in
    Python, so update it outside compiled functions (see
    :func:`keras_capsules.interpret.parse_tree_report` for a whole ``tf.data`` dataset).

    Args:
        levels: ``K`` of the quantiser ``q_K`` that bins the coupling (REM: 11).
    """

    def __init__(self, levels=11):
        from keras_capsules.interpret.parse_trees import ParseTreeDictionary

        self.dictionary = ParseTreeDictionary(levels)

    def update_state(self, coupling, scores):
        scores = np.asarray(ops.convert_to_numpy(scores))
        predictions = np.argmax(scores, axis=-1) if scores.ndim == 2 else scores
        self.dictionary.update(np.asarray(ops.convert_to_numpy(coupling)), predictions)

    def result(self):
        return self.dictionary.mean_entropy()

    def class_entropies(self):
        return self.dictionary.entropies()

    def num_trees(self):
        return self.dictionary.num_trees()

    def reset_state(self):
        self.dictionary.reset()
