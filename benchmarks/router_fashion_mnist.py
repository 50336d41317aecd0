"""Every router on Fashion-MNIST in one small network, the same budget each, the step chosen on validation.

Network: Conv 5x5x64 ReLU -> Conv 3x3x64 s2 ReLU -> PrimaryCaps (16 types x 16D, 3x3 s2, squash;
5x5x16 = 400 capsules) -> FcCaps (10 x 16D, the router under test, 3 iterations where iterative) ->
a shared Linear(16 -> 1) logit per class capsule (the inverted-attention head, which suits every
router's poses) -> softmax cross-entropy. Adam 1e-3, batch 64, ``--steps`` steps (seed 0) on the training
images less the library's default validation hold-out (5,000 images, ``datasets.holdout``). Validation
accuracy on the first ``--validation-images`` of the hold-out after every ``--eval-every`` steps; the
weights of the best validation step are restored and read the full test set once.

Usage: ``python -m benchmarks router_fashion_mnist --data-dir DATA_DIR [--steps 300] [--routers dynamic,em]``
(or set ``KERAS_CAPSULES_DATA`` instead of ``--data-dir``): the folder with the Fashion-MNIST IDX files. Writes the raw
``benchmarks/results/router_fashion_mnist.json`` (not a run file of the report) and prints a Markdown table; the
measured tables are kept in ``docs/results/router-comparison/``. Training
times are recorded but are comparable only within a run on an otherwise idle machine.
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
from keras_capsules.datasets import holdout, load_arrays  # noqa: E402


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


def accuracy(model, images, labels):
    return float(np.mean(np.argmax(model.predict(images, batch_size=250, verbose=0), -1) == labels))


def train_and_choose(model, x, y, xv, yv, steps, eval_every):
    """Trains ``steps`` steps of batch 64, reading validation after every ``eval_every``; restores the best step.

    Returns:
        ``(validation curve [(step, accuracy)], chosen step, training seconds, last training loss)``.
    """
    curve, best, seconds, loss = [], None, 0.0, None
    for start in range(0, steps, eval_every):
        stop = min(start + eval_every, steps)
        begin = time.time()
        history = model.fit(x[64 * start : 64 * stop], y[64 * start : 64 * stop], batch_size=64, epochs=1, verbose=0)
        seconds += time.time() - begin
        loss = history.history["loss"][-1]
        curve.append((stop, accuracy(model, xv, yv)))
        if best is None or curve[-1][1] > best[1]:
            best = (stop, curve[-1][1], model.get_weights())
    model.set_weights(best[2])
    return curve, best[0], seconds, loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--eval-every", type=int, default=100, help="steps between validation readings")
    parser.add_argument("--validation-images", type=int, default=2000, help="hold-out images read each time")
    parser.add_argument("--routers", default=None, help="comma-separated router names (default: every one)")
    parser.add_argument(
        "--data-dir", default=os.environ.get("KERAS_CAPSULES_DATA"), help="folder with the Fashion-MNIST IDX files"
    )
    args = parser.parse_args()
    if not args.data_dir:
        parser.error("give --data-dir or set KERAS_CAPSULES_DATA to the folder with the Fashion-MNIST files")
    x, y = load_arrays("fashion_mnist", "train", data_dir=args.data_dir)
    xt, yt = load_arrays("fashion_mnist", "test", data_dir=args.data_dir)
    train_indices, validation_indices = holdout.split_indices(len(x), holdout.default_size(len(x)))
    if 64 * args.steps > len(train_indices):
        parser.error(f"--steps {args.steps} needs {64 * args.steps} training images; {len(train_indices)} are left")
    x, y = x.astype("float32") / 255.0, y
    xv, yv = x[validation_indices[: args.validation_images]], y[validation_indices[: args.validation_images]]
    x, y = x[train_indices[: 64 * args.steps]], y[train_indices[: 64 * args.steps]]
    xt = xt.astype("float32") / 255.0
    rows = []
    for router in args.routers.split(",") if args.routers else routing.available():
        keras.utils.set_random_seed(0)
        model = small_network(router)
        model.compile(
            optimizer=keras.optimizers.Adam(1e-3), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        )
        curve, chosen, seconds, loss = train_and_choose(model, x, y, xv, yv, args.steps, args.eval_every)
        rows.append(
            {
                "router": router,
                "steps": args.steps,
                "validation_curve": curve,
                "chosen_step": chosen,
                "validation_accuracy": dict(curve)[chosen],
                "test_accuracy": accuracy(model, xt, yt),
                "test_images": len(yt),
                "final_loss": loss,
                "train_seconds": seconds,
                "params": model.count_params(),
            }
        )
        print(rows[-1], flush=True)
    payload = {"machine": machine_description(), "rows": rows}
    print(write_results("router_fashion_mnist", payload))
    print(
        "\n| router | parameters | chosen step | validation accuracy | test accuracy | training time (s) |"
        "\n|---|---:|---:|---:|---:|---:|"
    )
    for r in sorted(rows, key=lambda r: -r["validation_accuracy"]):
        print(
            f"| `{r['router']}` | {r['params']:,} | {r['chosen_step']} | {100 * r['validation_accuracy']:.1f} % "
            f"| {100 * r['test_accuracy']:.1f} % | {r['train_seconds']:.0f} |"
        )


if __name__ == "__main__":
    main()
