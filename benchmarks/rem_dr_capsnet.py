"""DR-CapsNet with and without REM on real MNIST / Fashion-MNIST: accuracy, sparsity, routing entropy, parse trees.

REM's DR-CapsNet (docs/reference/models.md#dr-capsnet-of-rem): conv 9x9 -> primary capsules 8D (9x9, stride 2) -> 10 class
capsules 16D, dynamic routing (3 iterations) with the 0.1 routing bias, no decoder, margin loss, Adam
1e-3 decayed x0.99 per epoch, batch 128 in REM. Two runs from the same initial weights:

- vanilla: plain training; then test accuracy, and "+Q" (REM's quantiser q_K in every router at
  inference) with the routing entropy and the number of parse trees per class;
- REM: the same training with :class:`keras_capsules.training.pruning.LobsterPruning` (LOBSTER
  shrinkage every step, validated global magnitude threshold every epoch); then the same measures
  and the sparsity.

The full paper network (``--full``: ``CapsNet(router={"name": "dynamic", "use_bias": True})``,
6.8M parameters) trains at about 20 images/s on a 2-core CPU, so the default is a reduced DR-CapsNet
built from the same layers (``--conv-filters 64 --primary-types 8``: 288 primary capsules instead of
1,152) on a subset, for a short budget (see docs/rem.md for the measured numbers and their limits).

Usage::

    python -m benchmarks rem_dr_capsnet --dataset mnist --data-dir DATA_DIR   # or set KERAS_CAPSULES_DATA

Writes ``benchmarks/results/rem_dr_capsnet_<dataset>_<epochs>ep.json`` and prints a Markdown table.
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchmarks.common import machine_description, write_results  # noqa: E402
from keras_capsules import applications, datasets, layers, losses  # noqa: E402
from keras_capsules.interpret import parse_tree_report  # noqa: E402
from keras_capsules.training import pruning  # noqa: E402

ROUTER = {"name": "dynamic", "use_bias": True}


def dr_capsnet(args):
    """The paper's DR-CapsNet (``--full``) or the reduced one with the same layer types."""
    if args.full:
        return applications.CapsNet(router=ROUTER, name="dr_capsnet")
    inputs = keras.Input((28, 28, 1))
    x = keras.layers.Conv2D(args.conv_filters, 9, activation="relu", name="conv1")(inputs)
    primary = layers.PrimaryCaps(
        args.primary_types, 8, kernel_size=9, strides=2, activation="squash", name="primary_caps"
    )(x)
    poses, _ = layers.FcCaps(10, 16, router=ROUTER, routing_iterations=3, name="class_caps")(primary)
    return keras.Model(inputs, layers.Length(name="length")(poses), name="dr_capsnet_small")


def pipeline(images, labels, batch_size, shuffle, seed=0):
    data = tf.data.Dataset.from_tensor_slices((images, labels))
    if shuffle:
        data = data.shuffle(len(images), seed=seed, reshuffle_each_iteration=True)
    return data.batch(batch_size).map(lambda x, y: (tf.cast(x, tf.float32) / 255.0, y)).prefetch(tf.data.AUTOTUNE)


def run(name, args, initial_weights, splits, use_rem):
    """Trains from ``initial_weights`` on fresh pipelines (both runs see the same batches in the same order)."""
    (train_x, train_y), (val_x, val_y), (test_x, test_y) = splits
    train = pipeline(train_x, train_y, args.batch_size, shuffle=True, seed=args.seed)
    val = pipeline(val_x, val_y, 250, shuffle=False)
    test = pipeline(test_x, test_y, 250, shuffle=False)
    keras.utils.set_random_seed(args.seed)
    model = dr_capsnet(args)
    model.set_weights(initial_weights)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=losses.MarginLoss(), metrics=["accuracy"])
    callbacks = [keras.callbacks.LearningRateScheduler(lambda epoch: 1e-3 * 0.99**epoch)]
    rem = None
    if use_rem:
        rem = pruning.LobsterPruning(val, strength=args.strength, max_search_steps=args.max_search_steps, verbose=1)
        callbacks.append(rem)
    start = time.time()
    history = model.fit(train, validation_data=val, epochs=args.epochs, callbacks=callbacks, verbose=2)
    train_seconds = time.time() - start
    accuracy = float(model.evaluate(test, verbose=0, return_dict=True)["accuracy"])
    start = time.time()
    report = parse_tree_report(model, test, levels=args.levels, quantize=True)
    report_seconds = time.time() - start
    sparsity = pruning.sparsity(model)
    return {
        "name": name,
        "test_accuracy": accuracy,
        "test_accuracy_q": report["accuracy"],
        "entropy_mean": report["entropy_mean"],
        "entropy_std": report["entropy_std"],
        "num_trees_total": report["num_trees_total"],
        "classes": report["classes"],
        "sparsity": sparsity["sparsity"],
        "sparsity_per_weight": {k: v["sparsity"] for k, v in sparsity["weights"].items()},
        "nonzero_prunable": sparsity["total"] - sparsity["zeros"],
        "prunable": sparsity["total"],
        "history": {k: [float(v) for v in vs] for k, vs in history.history.items()},
        "rem_epochs": rem.history if rem else None,
        "train_seconds": round(train_seconds, 1),
        "report_seconds": round(report_seconds, 1),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="mnist", choices=["mnist", "fashion_mnist"])
    parser.add_argument(
        "--data-dir", default=os.environ.get("KERAS_CAPSULES_DATA"), help="folder with the dataset's IDX files"
    )
    parser.add_argument("--train-size", type=int, default=5000)
    parser.add_argument("--val-size", type=int, default=1000, help="held out from the training split, as REM")
    parser.add_argument("--test-size", type=int, default=10000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--conv-filters", type=int, default=64)
    parser.add_argument("--primary-types", type=int, default=8)
    parser.add_argument("--full", action="store_true", help="the paper's 6.8M-parameter network")
    parser.add_argument("--levels", type=int, default=11, help="K of q_K (REM: 11 for DR-CapsNet)")
    parser.add_argument("--strength", type=float, default=1e-4, help="LOBSTER lambda (REM: 1e-4)")
    parser.add_argument("--max-search-steps", type=int, default=12, help="cap on the threshold bisection (REM: none)")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    if not args.data_dir:
        parser.error(f"give --data-dir or set KERAS_CAPSULES_DATA to the folder with the {args.dataset} files")

    images, labels = datasets.load_arrays(args.dataset, "train", data_dir=args.data_dir)
    test_images, test_labels = datasets.load_arrays(args.dataset, "test", data_dir=args.data_dir)
    order = np.random.default_rng(args.seed).permutation(len(images))
    train_idx, val_idx = order[: args.train_size], order[args.train_size : args.train_size + args.val_size]
    splits = (
        (images[train_idx], labels[train_idx]),
        (images[val_idx], labels[val_idx]),
        (test_images[: args.test_size], test_labels[: args.test_size]),
    )

    keras.utils.set_random_seed(args.seed)
    initial = dr_capsnet(args).get_weights()
    start = time.time()
    results = [
        run("DR-CapsNet", args, initial, splits, use_rem=False),
        run("DR-CapsNet + REM", args, initial, splits, use_rem=True),
    ]
    payload = {
        "machine": machine_description(),
        "config": vars(args),
        "parameters": int(dr_capsnet(args).count_params()),
        "wall_seconds": round(time.time() - start, 1),
        "runs": results,
    }
    path = write_results(f"rem_dr_capsnet_{args.dataset}_{args.epochs}ep", payload)
    print(
        f"\n{args.dataset}, {args.train_size} train / {args.val_size} val / {args.test_size} test images, {args.epochs} epochs, "
        f"{payload['parameters']:,} parameters, K = {args.levels}; {payload['wall_seconds']:.0f} s. Results: {path}\n"
    )
    print("| model | test acc. | acc. +Q | entropy H (bits, mean +- std over classes) | parse trees | sparsity |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['name']} | {r['test_accuracy']:.2%} | {r['test_accuracy_q']:.2%} | {r['entropy_mean']:.2f} +- {r['entropy_std']:.2f} | "
            f"{r['num_trees_total']} | {r['sparsity']:.2%} |"
        )
    print("\nper class (entropy / trees / predicted samples):")
    for r in results:
        cells = ", ".join(f"{c}: {v['entropy']:.2f}/{v['num_trees']}/{v['samples']}" for c, v in r["classes"].items())
        print(f"- {r['name']}: {cells}")


if __name__ == "__main__":
    main()
