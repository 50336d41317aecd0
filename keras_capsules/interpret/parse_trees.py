"""REM parse-tree dictionaries and routing entropy (Renzulli et al.; docs/reference/rem.md#parse-tree-dictionaries-and-entropy).

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

import contextlib

import keras
import numpy as np

from keras_capsules import errors
from keras_capsules.interpret.coupling import (
    check_images,
    quantization,
    routed_layer,
    routing_layer_names,
    routing_probe,
    trace_from_outputs,
)
from keras_capsules.metrics import ParseTreeDictionary, tree_keys  # noqa: F401  (public here too: interpret.tree_keys)


def _split_batch(batch):
    if isinstance(batch, (tuple, list)):
        return batch[0], (batch[1] if len(batch) > 1 else None)
    return batch, None


def parse_tree_report(
    model, dataset, levels=11, quantize=True, layer=None, max_batches=None, include_dictionaries=False
):
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
        num_trees``; and a ``note`` when the layer's router normalises its coupling over the children
        (``Router.coupling_sums_over``), where REM's quantiser leaves few distinct keys.
    """
    names = routing_layer_names(model)
    layer = names[-1] if layer is None else layer
    if layer not in names:
        errors.fail("interpret.parse_tree_report", "layer", f"one of the routed layers {names}", layer)
    dictionary = ParseTreeDictionary(levels)
    correct = labelled = children = 0
    with quantization(model, levels) if quantize else contextlib.nullcontext(model):
        probe = routing_probe(model, [layer])
        for step, batch in enumerate(dataset):
            if max_batches is not None and step >= max_batches:
                break
            images, labels = _split_batch(batch)
            if keras.backend.backend() != "tensorflow":
                images = np.asarray(images)  # tf.data batches reach a JAX or PyTorch model as arrays
            if step == 0:
                check_images("interpret.parse_tree_report", model, images)
            trace = trace_from_outputs(model, probe.predict_on_batch(images))
            record = trace[layer]
            children = record.coupling.shape[1]
            predictions = trace.predictions
            dictionary.update(record.class_coupling(), predictions)
            if labels is not None:
                labels = np.asarray(keras.ops.convert_to_numpy(labels)).reshape(-1)
                correct += int((labels == predictions).sum())
                labelled += labels.size
    report = {"layer": layer, "quantized": bool(quantize), "accuracy": correct / labelled if labelled else None}
    report.update(dictionary.summary(include_dictionaries))
    router = routed_layer(model, layer).router
    if router.coupling_sums_over == "children" and children:
        report["note"] = (
            f"{layer}'s {router.router_name} routing weights each parent's {children} children with couplings "
            f"that sum to 1 over the children, not over the parents as REM's routers do: quantised to {levels} levels "
            "on [0, 1] they fall mostly in the lowest bins, so the entropy and the parse trees say little here; pictures "
            "drawn without quantisation (quantize=False, --no-quantize) show the raw couplings."
        )
    return report
