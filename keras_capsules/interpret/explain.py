"""``explain()``: the REM report of a trained model (entropy JSON and pictures), behind ``keras-capsules explain``."""

import contextlib
import json
import os

import numpy as np
from keras import ops

from keras_capsules.interpret.coupling import quantization, routing_trace
from keras_capsules.interpret.fc_tree import fc_parse_tree, plot_parse_tree
from keras_capsules.interpret.parse_trees import parse_tree_report
from keras_capsules.interpret.plotting import require_matplotlib
from keras_capsules.interpret.saliency import plot_saliency, saliency_from_record, spatial
from keras_capsules.metrics import sparsity


def check_pictures(num_images):
    """Raises ``ImportError`` at once when ``num_images > 0`` pictures are asked for and matplotlib is missing."""
    if num_images > 0:
        try:
            require_matplotlib()
        except ImportError as error:
            raise ImportError(
                f"{error} Or pass num_images=0 (CLI: --num-images 0) to write entropy.json only."
            ) from None


def explain(
    model, dataset, output_dir, levels=11, quantize=True, num_images=8, max_batches=None, include_dictionaries=False
):
    """Writes ``entropy.json``, ``saliency.png`` and ``parse_tree_<i>.png`` for ``model`` on ``dataset``.

    - ``entropy.json``: :func:`~keras_capsules.interpret.parse_tree_report` (accuracy, per-class
      entropy and number of parse trees, their mean and std) plus the model's pruning sparsity.
    - ``saliency.png``: eq. 16 maps of the first ``num_images`` images, when a routed FcCaps layer
      has children on a grid of more than one position (primary or conv capsules); otherwise the
      report's ``"saliency"`` says why there is none (Efficient-CapsNet: a 1x1 grid).
    - ``parse_tree_<i>.png``: the FC parse tree of each of those images through the FcCaps layers.

    Args:
        model: a trained application model (also loaded from ``.keras``).
        dataset: a ``tf.data.Dataset`` of ``(images, labels)`` batches (or images only).
        output_dir: folder to write into (created).
        levels: ``K`` of ``q_K``.
        quantize: run the routers with ``q_K`` (REM's "+Q"); pictures use the same setting.
        num_images: how many images of the first batch get pictures (0: none; more need matplotlib,
            checked before anything is computed or written).
        max_batches: limit the entropy pass to this many batches.
        include_dictionaries: put every parse-tree key and count in the JSON.

    Returns:
        The report dict (as written to ``entropy.json``), with ``"files"`` listing what was written.
    """
    check_pictures(num_images)  # before the entropy pass and before output_dir is made
    os.makedirs(output_dir, exist_ok=True)
    report = parse_tree_report(
        model, dataset, levels, quantize, max_batches=max_batches, include_dictionaries=include_dictionaries
    )
    try:
        report["sparsity"] = sparsity(model)["sparsity"]
    except ValueError:
        report["sparsity"] = None
    files = []
    if num_images > 0:
        batch = next(iter(dataset))
        images = np.asarray(ops.convert_to_numpy(batch[0] if isinstance(batch, (tuple, list)) else batch))[:num_images]
        with quantization(model, levels) if quantize else contextlib.nullcontext():
            trace = routing_trace(model, images)
        titles = [f"pred {p}" for p in trace.predictions]
        grid_layers = [r for r in trace.layers if spatial(r)]
        if grid_layers:
            maps = saliency_from_record(grid_layers[-1], trace.predictions, images.shape[1:3])
            files.append(plot_saliency(images, maps, os.path.join(output_dir, "saliency.png"), titles=titles))
        else:
            report["saliency"] = "not drawn: no routed FcCaps layer has children on a grid of more than one position"
        if any(r.layer_type == "FcCaps" for r in trace.layers):
            for i in range(len(images)):
                tree = fc_parse_tree(trace, index=i)
                files.append(plot_parse_tree(tree, os.path.join(output_dir, f"parse_tree_{i}.png")))
    report["files"] = [os.path.basename(f) for f in files]
    with open(os.path.join(output_dir, "entropy.json"), "w") as handle:
        json.dump(report, handle, indent=2)
    return report
