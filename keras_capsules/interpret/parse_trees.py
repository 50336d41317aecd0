"""REM parse-tree dictionaries and routing entropy (Renzulli et al.; ALGORITHMS.md §8.2-8.3).

For every example with predicted class ``j``, the coupling vector ``c~_{:, j}`` of the last routing
layer over all its children is quantised by ``q_K`` and written as a key: the bin index of each
child followed by ``"-"`` (``"1-1-11-3-"``). Keys are counted per **predicted** class; the entropy of
class ``j`` is ``H_j = -sum_keys p log2 p`` (eq. 14) and the network's entropy is their mean over
the classes (eq. 15). The number of parse trees of a class is its number of distinct keys.

Bin indices follow REM's ``np.digitize(c, edges, right=False)`` with edges
``linspace(-0.5/(K-1), 1 + 0.5/(K-1), K+1)``: they run from 1 (centre 0) to ``K`` (centre 1), so the
centre ``k/(K-1)`` has index ``k + 1`` (equal to REM's up to values exactly on a bin edge).
Children are ordered as the layer flattens them, (row, column, type); REM flattens (type, row,
column). The two orders give keys that map one to one, so counts, entropies and numbers of trees
are the same.
"""

import collections
import contextlib

import keras
import numpy as np

from keras_capsules import errors
from keras_capsules.interpret.coupling import quantization, routing_layer_names, routing_probe, trace_from_outputs
from keras_capsules.metrics import routing_entropy
from keras_capsules.ops.quantize import quantize_bins


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
            "interpret.tree_keys",
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
    """Per-class parse-tree dictionaries, filled batch by batch (entropies by :func:`keras_capsules.metrics.routing_entropy`).

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


def _split_batch(batch):
    if isinstance(batch, (tuple, list)):
        return batch[0], (batch[1] if len(batch) > 1 else None)
    return batch, None


def parse_tree_report(model, dataset, levels=11, quantize=True, layer=None, max_batches=None, include_dictionaries=False):
    """Parse-tree dictionaries, entropy and accuracy of ``model`` over a whole dataset.

    Args:
        model: an application model (also loaded from ``.keras``).
        dataset: a ``tf.data.Dataset`` (or any iterable) of batches ``images`` or ``(images, labels, ...)``.
        levels: ``K`` of ``q_K`` (REM: 11 for DR-CapsNet, 21 for Eff-ConvCapsNet).
        quantize: apply ``q_K`` inside every router during the pass (REM's "+Q" inference; the
            predictions then come from the quantised network). With ``False`` the routers run as
            configured and only the keys are binned.
        layer: the routed layer whose coupling forms the keys (default: the last one, which must be
            an FcCaps layer whose parents are the classes).
        max_batches: stop after this many batches.
        include_dictionaries: add every ``{key: count}`` to the report (large).

    Returns:
        A JSON-ready dict: ``layer, levels, quantized, num_samples, accuracy`` (``None`` without
        labels), ``entropy_mean, entropy_std, num_trees_total`` and per class ``samples, entropy,
        num_trees``.
    """
    names = routing_layer_names(model)
    layer = names[-1] if layer is None else layer
    if layer not in names:
        errors.fail("interpret.parse_tree_report", "layer", f"one of the routed layers {names}", layer)
    dictionary = ParseTreeDictionary(levels)
    correct = labelled = 0
    with quantization(model, levels) if quantize else contextlib.nullcontext(model):
        probe = routing_probe(model, [layer])
        for step, batch in enumerate(dataset):
            if max_batches is not None and step >= max_batches:
                break
            images, labels = _split_batch(batch)
            trace = trace_from_outputs(model, probe.predict_on_batch(images))
            record = trace[layer]
            predictions = trace.predictions
            dictionary.update(record.class_coupling(), predictions)
            if labels is not None:
                labels = np.asarray(keras.ops.convert_to_numpy(labels)).reshape(-1)
                correct += int((labels == predictions).sum())
                labelled += labels.size
    report = {"layer": layer, "quantized": bool(quantize), "accuracy": correct / labelled if labelled else None}
    report.update(dictionary.summary(include_dictionaries))
    return report

