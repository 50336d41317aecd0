"""Metrics (backend-agnostic ``keras.ops``), as functions on a batch and as Keras ``Metric`` classes.

Sections:

- GLOM islands of agreement: :func:`tv_n` (paper eq. 13), :func:`tv_n_code` (the reference code's
  variant), :class:`TVn`.
- Routing (REM, Renzulli et al.): :func:`routing_entropy` (eq. 14), :func:`tree_keys` and
  :class:`ParseTreeDictionary` (parse-tree keys and per-class counts, also exported by
  ``keras_capsules.interpret``), :class:`RoutingEntropy` (per-class parse-tree entropies and their
  mean, eq. 15, accumulated over batches).
- Model sparsity (REM): :func:`sparsity`, the zero fraction of the prunable weights (the scope is
  :mod:`keras_capsules.pruning_scope`; also in ``keras_capsules.training.pruning``).
"""

import collections

import keras
import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.ops.normalize import l2_normalize
from keras_capsules.ops.patches import resolve_grid
from keras_capsules.ops.quantize import quantize_bins
from keras_capsules.pruning_scope import prunable_weights
from keras_capsules.serialization import register

# ---------------------------------------------------------------------------------------------------
# GLOM islands of agreement (Zeng et al., eq. 13; docs/reference/glom.md#island-metric)
# ---------------------------------------------------------------------------------------------------


def _check_embeddings(where, embeddings):
    if len(embeddings.shape) not in (3, 4):
        errors.fail(
            where, "embeddings", "a tensor (batch, N, d) or (batch, N, levels, d)", f"shape {tuple(embeddings.shape)}"
        )


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
    unit = l2_normalize(ops.cast(embeddings, "float32"))
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
    _check_embeddings("tv_n_code", embeddings)
    num, dim = embeddings.shape[1], embeddings.shape[-1]
    h, w = resolve_grid("tv_n_code", "grid_shape", num, grid_shape)
    unit = l2_normalize(ops.cast(embeddings, "float32"))
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
        if not errors.is_integer(level):
            errors.fail(self, "level", "an integer level index", level, TypeError)
        self.level = int(level)
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


def tree_keys(coupling, predictions, levels=11):
    """Parse-tree keys of a batch.

    Args:
        coupling: the last routing layer's coupling ``(batch, in_caps, classes)`` (or with the
            children as a grid, ``(batch, H, W, types, classes)``), quantised or not.
        predictions: ``(batch,)`` predicted classes.
        levels: ``K`` of the quantiser.

    Returns:
        A list of ``batch`` strings: the 1-based bin index of ``c_{i, j}`` for every child ``i``,
        each followed by ``"-"``.

    Example:
        >>> tree_keys(np.array([[[0.0, 1.0], [0.31, 0.69]]]), np.array([1]), levels=11)
        ['11-8-']
    """
    coupling = np.asarray(coupling)
    predictions = np.asarray(predictions).reshape(-1).astype("int64")
    if coupling.ndim < 3 or coupling.shape[0] != predictions.shape[0]:
        errors.fail(
            "tree_keys",
            "coupling",
            f"an array (batch, ..., classes) with batch = {predictions.shape[0]} (the number of predictions)",
            f"shape {coupling.shape}",
        )
    flat = coupling.reshape(coupling.shape[0], -1, coupling.shape[-1])
    chosen = flat[np.arange(flat.shape[0]), :, predictions]
    bins = np.asarray(keras.ops.convert_to_numpy(quantize_bins(chosen.astype("float32"), levels))) + 1
    tokens = np.array([f"{k}-" for k in range(levels + 1)], dtype=object)
    return ["".join(row) for row in tokens[bins]]


class ParseTreeDictionary:
    """Per-class parse-tree dictionaries, filled batch by batch (entropies by :func:`routing_entropy`).

    Args:
        levels: ``K`` of the quantiser.

    Attributes:
        counts: ``{class: Counter({key: count})}`` for the classes predicted so far.
    """

    def __init__(self, levels=11):
        errors.check_positive_int("ParseTreeDictionary", "levels", levels, minimum=2)
        self.levels = levels
        self.counts = collections.defaultdict(collections.Counter)

    def update(self, coupling, predictions):
        """Adds a batch: ``coupling (batch, ..., classes)``, ``predictions (batch,)``."""
        predictions = np.asarray(predictions).reshape(-1)
        for key, cls in zip(tree_keys(coupling, predictions, self.levels), predictions):
            self.counts[int(cls)][key] += 1

    def reset(self):
        """Empties every dictionary."""
        self.counts.clear()

    def entropies(self, base=2.0):
        """``{class: H_j}`` (eq. 14) for every predicted class."""
        return {cls: routing_entropy(self.counts[cls].values(), base) for cls in sorted(self.counts)}

    def mean_entropy(self, base=2.0):
        """``H = mean_j H_j`` over the predicted classes (eq. 15); 0.0 when empty."""
        values = list(self.entropies(base).values())
        return float(np.mean(values)) if values else 0.0

    def num_trees(self):
        """``{class: number of distinct keys}``."""
        return {cls: len(self.counts[cls]) for cls in sorted(self.counts)}

    def summary(self, include_dictionaries=False):
        """A JSON-ready dict: per class samples, entropy and trees; mean and std of the entropy across classes."""
        entropies = self.entropies()
        values = list(entropies.values())
        report = {
            "levels": self.levels,
            "num_samples": int(sum(sum(c.values()) for c in self.counts.values())),
            "entropy_mean": float(np.mean(values)) if values else 0.0,
            "entropy_std": float(np.std(values)) if values else 0.0,
            "num_trees_total": int(sum(self.num_trees().values())),
            "classes": {
                str(cls): {
                    "samples": int(sum(self.counts[cls].values())),
                    "entropy": entropies[cls],
                    "num_trees": len(self.counts[cls]),
                }
                for cls in sorted(self.counts)
            },
        }
        if include_dictionaries:
            report["dictionaries"] = {str(cls): dict(self.counts[cls]) for cls in sorted(self.counts)}
        return report


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


# ---------------------------------------------------------------------------------------------------
# Model sparsity (REM, docs/reference/rem.md#pruning): how many prunable weights are zero
# ---------------------------------------------------------------------------------------------------


def sparsity(model, layer_types=None):
    """Fraction of exactly-zero prunable weights, per weight and globally.

    Counts the kernels only, the weights that pruning zeroes
    (:func:`~keras_capsules.pruning_scope.prunable_weights` of ``layer_types``, default
    :data:`~keras_capsules.pruning_scope.PRUNING_LAYERS`). REM's figure (its ``architecture_stat``)
    divides the same zeros by every parameter of the pruning layers, biases and routing bias included
    (BatchNorm and the decoder not): for ``EffCapsNet(weights="mnist_rem")`` 75.37 % of 161,248 against
    this function's 75.64 % of 160,672.

    Returns:
        ``{"weights": {path: {"zeros", "total", "sparsity"}}, "zeros", "total", "sparsity"}``
        (the zero fraction per kernel and over all of them).
    """
    report, zeros, total = {}, 0, 0
    for variable in prunable_weights(model, layer_types):
        values = np.asarray(ops.convert_to_numpy(variable))
        count = int(values.size - np.count_nonzero(values))
        report[variable.path] = {"zeros": count, "total": int(values.size), "sparsity": count / values.size}
        zeros += count
        total += values.size
    return {"weights": report, "zeros": int(zeros), "total": int(total), "sparsity": zeros / total}
