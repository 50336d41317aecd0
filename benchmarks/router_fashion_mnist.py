"""Short real-data check per router on Fashion-MNIST: the same small network, a few hundred steps each.

Network: Conv 5x5x64 ReLU -> Conv 3x3x64 s2 ReLU -> PrimaryCaps (16 types x 16D, 3x3 s2, squash;
5x5x16 = 400 capsules) -> FcCaps (10 x 16D, the router under test, 3 iterations where iterative) ->
a shared Linear(16 -> 1) logit per class capsule (the inverted-attention head, which suits every
router's poses) -> softmax cross-entropy. Adam 1e-3, batch 64, ``--steps`` steps on the training
files, accuracy on the first 2,000 test images.

Usage: ``python -m benchmarks router_fashion_mnist --data-dir DATA_DIR [--steps 300] [--routers dynamic,em]``
(or set ``KERAS_CAPSULES_DATA`` instead of ``--data-dir``): the folder with the Fashion-MNIST IDX files. Writes
``benchmarks/results/router_fashion_mnist.json`` and prints a Markdown table.
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.common import machine_description, write_results  # noqa: E402
from keras_capsules import layers, routing  # noqa: E402
from keras_capsules.applications.inverted_attention_capsnet import CapsuleLogits  # noqa: E402
from keras_capsules.datasets import load_arrays  # noqa: E402


def small_network(router):
    iterative = routing.get(router).iterative
    images = keras.Input((28, 28, 1))
    x = keras.layers.Conv2D(64, 5, activation="relu")(images)
    x = keras.layers.Conv2D(64, 3, strides=2, activation="relu")(x)
    primary = layers.PrimaryCaps(16, 16, kernel_size=3, strides=2, activation="squash")(x)
    poses, _ = layers.FcCaps(10, 16, router=router, routing_iterations=3 if iterative else None, name="class_caps")(
        primary
    )
    return keras.Model(images, CapsuleLogits(name="logits")(poses), name=f"small_{router}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--routers", default=None)
    parser.add_argument(
        "--data-dir", default=os.environ.get("KERAS_CAPSULES_DATA"), help="folder with the Fashion-MNIST IDX files"
    )
    args = parser.parse_args()
    if not args.data_dir:
        parser.error("give --data-dir or set KERAS_CAPSULES_DATA to the folder with the Fashion-MNIST files")
    x, y = load_arrays("fashion_mnist", "train", data_dir=args.data_dir)
    xt, yt = load_arrays("fashion_mnist", "test", data_dir=args.data_dir)
    n = 64 * args.steps
    x, y = x[:n].astype("float32") / 255.0, y[:n]
    xt, yt = xt[:2000].astype("float32") / 255.0, yt[:2000]
    rows = []
    for router in args.routers.split(",") if args.routers else routing.available():
        keras.utils.set_random_seed(0)
        model = small_network(router)
        model.compile(
            optimizer=keras.optimizers.Adam(1e-3), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        )
        start = time.time()
        history = model.fit(x, y, batch_size=64, epochs=1, verbose=0)
        seconds = time.time() - start
        accuracy = float(np.mean(np.argmax(model.predict(xt, batch_size=250, verbose=0), -1) == yt))
        rows.append(
            {
                "router": router,
                "steps": args.steps,
                "test_accuracy": accuracy,
                "final_loss": history.history["loss"][-1],
                "train_seconds": seconds,
                "params": model.count_params(),
            }
        )
        print(rows[-1], flush=True)
    payload = {"machine": machine_description(), "rows": rows}
    write_results("router_fashion_mnist", payload)
    print(
        "\n| router | parameters | steps | test accuracy (2,000 images) | training time (s) |\n|---|---:|---:|---:|---:|"
    )
    for r in rows:
        print(
            f"| {r['router']} | {r['params']:,} | {r['steps']} | {r['test_accuracy']:.4f} | {r['train_seconds']:.0f} |"
        )


if __name__ == "__main__":
    main()
