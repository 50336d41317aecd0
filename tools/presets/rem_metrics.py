"""REM card entries of a pruned preset: sparsity, routing entropy and parse trees per class, as JSON for make_preset.

    python tools/presets/make_preset.py RUN_DIR --model EffCapsNet --name mnist_rem ...   # ships the file
    python tools/presets/rem_metrics.py --model EffCapsNet --name mnist_rem --dataset mnist \
        --data-dir DATA_DIR [--levels 11] > rem_metrics.json
    python tools/presets/make_preset.py RUN_DIR ... --skip-export --metrics "$(cat rem_metrics.json)"

The preset is loaded through the public constructor (``Model(weights=name)``, the file that ships);
the parse-tree dictionaries are filled over the whole test set with ``q_K`` applied inside the
routers (REM's "+Q" inference), keyed by the predicted class. Sparsity is REM's: the fraction of
exactly-zero weights among the pruning layers' kernels (convolutions and capsule vote transforms); the
card gives REM's own count beside it (its ``architecture_stat``: the zeros among every parameter of the
pruning layers, biases and the routing bias included).
"""

import argparse
import json

import numpy as np
from keras import ops

from keras_capsules import applications, datasets, interpret, introspection, pruning_scope
from keras_capsules.layers.votes import MatrixVotes, VectorVotes
from keras_capsules.training import pruning


def rem_count(model):
    """``(zeros, total)`` over every parameter of REM's pruning layers (its ``architecture_stat``).

    REM's layers are its convolutions and whole capsule layers: a convolution's bias counts, and so does
    a capsule layer's routing bias, which here sits beside its vote transform in the capsule layer.
    """
    votes = (VectorVotes, MatrixVotes)
    convolutions = [layer for layer in pruning_scope.pruning_layers(model) if not isinstance(layer, votes)]
    capsule_layers = [
        layer
        for layer in introspection.all_layers(model)
        if any(isinstance(sub, votes) for sub in introspection.sublayers(layer))
    ]
    variables = pruning_scope.unique_variables(v for layer in convolutions + capsule_layers for v in layer.weights)
    values = [np.asarray(ops.convert_to_numpy(v)) for v in variables]
    return sum(int(v.size - np.count_nonzero(v)) for v in values), sum(int(v.size) for v in values)


def rem_metrics(model, dataset, data_dir=None, levels=11, batch_size=256):
    """``{card entry: text}`` for ``model`` on the full test set of ``dataset``."""
    weights = pruning.sparsity(model)
    rem_zeros, rem_total = rem_count(model)
    batches = datasets.load(dataset, "test", batch_size=batch_size, data_dir=data_dir, shuffle=False)
    report = interpret.parse_tree_report(model, batches, levels=levels, quantize=True)
    classes = report["classes"]
    return {
        "sparsity": (
            f"{100 * weights['sparsity']:.1f} % of the {weights['total']:,} prunable weights (convolutions and vote "
            f"transforms) are zero; {weights['total'] - weights['zeros']:,} remain. Counted as REM's code counts (every "
            f"parameter of the pruning layers, biases and the routing bias included): {100 * rem_zeros / rem_total:.2f} % "
            f"of {rem_total:,}"
        ),
        "routing_entropy": (
            f"{report['entropy_mean']:.3f} bits (mean over the classes, std {report['entropy_std']:.3f}; "
            f"q_{levels}, {report['num_samples']:,} {dataset} test images, keyed by predicted class)"
        ),
        "routing_entropy_per_class": " · ".join(f"{c}: {v['entropy']:.3f}" for c, v in classes.items()),
        "parse_trees_per_class": " · ".join(f"{c}: {v['num_trees']}" for c, v in classes.items())
        + f" ({report['num_trees_total']:,} in all)",
        "accuracy_with_q": f"{100 * report['accuracy']:.2f} % with q_{levels} in every router during the pass",
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--data-dir")
    parser.add_argument("--levels", type=int, default=11)
    args = parser.parse_args(argv)
    model = getattr(applications, args.model)(weights=args.name)
    print(json.dumps(rem_metrics(model, args.dataset, args.data_dir, args.levels)))


if __name__ == "__main__":
    main()
