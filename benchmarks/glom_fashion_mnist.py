"""Short Fashion-MNIST run of the agreement-aware GLOM: SupCon pre-training, then H2 on the frozen backbone.

Reproduces the numbers reported for issue 5 (accuracy, TV_n per level, run time) on a small subset of
the real Fashion-MNIST files. Configuration (documented choices, not the paper's CIFAR-10 settings):

- 28x28 images zero-padded to 32x32 (the 8x8 grid then splits into 2x2 windows of 4x4 for ``H_d``;
  a 7x7 grid would not), 1 channel;
- ``embedding_dim`` 64 instead of 128 so that a few hundred steps run on a laptop CPU;
- K = 2 levels, T = 4 iterations, CAE thresholds (0, -0.2), radius 3, ``w_td`` = 0.016385 (the code);
- stage 1: SupCon (tau 0.07) on two views (pad-and-crop, flip, translation: the RandAugment
  substitute of ``keras_capsules.recipes.glom``), AdamW with a one-cycle schedule;
- stage 2: H2 with cross-entropy on the frozen backbone + H1 projection (one augmented view).

Usage::

    python benchmarks/glom_fashion_mnist.py --data-dir /work/shared/data/fashion-mnist

Writes ``benchmarks/results/glom_fashion_mnist.json`` and the island/arrow PNGs next to it.
"""

import argparse
import gzip
import json
import math
import os
import time

import numpy as np


def read_split(data_dir, split):
    """The real IDX files through ``keras_capsules.datasets`` (NumPy fallback if that API is unavailable)."""
    try:
        from keras_capsules.datasets import load_arrays

        images, labels = load_arrays("fashion_mnist", split, data_dir=data_dir)
        return images.astype("float32") / 255.0, labels.astype("int32")
    except (ImportError, TypeError):
        prefix = "train" if split == "train" else "t10k"
        with gzip.open(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz")) as f:
            images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28, 1)
        with gzip.open(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz")) as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8)
        return images.astype("float32") / 255.0, labels.astype("int32")


def balanced_subset(images, labels, per_class, seed):
    rng = np.random.default_rng(seed)
    keep = np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:per_class] for c in range(10)])
    keep = rng.permutation(keep)
    return images[keep], labels[keep]


def pad32(images):
    return np.pad(images, ((0, 0), (2, 2), (2, 2), (0, 0)))


def tv_per_level(model, images, glom_levels, metrics, keras):
    levels, agreement = glom_levels(model, images, return_agreement=True, batch_size=100)
    paper = keras.ops.convert_to_numpy(metrics.tv_n(levels)).mean(0)
    code = keras.ops.convert_to_numpy(metrics.tv_n_code(agreement)).mean(0)
    return [round(float(v), 5) for v in paper], [round(float(v), 5) for v in code], levels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("KERAS_CAPSULES_DATA", "/work/shared/data/fashion-mnist"))
    parser.add_argument("--train-per-class", type=int, default=200)
    parser.add_argument("--test-images", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--pretrain-epochs", type=int, default=5)
    parser.add_argument("--classifier-epochs", type=int, default=8)
    parser.add_argument("--embedding-dim", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = parser.parse_args()

    import keras

    from keras_capsules import metrics
    from keras_capsules.applications import AgreementGLOM
    from keras_capsules.applications.agreement_glom import glom_levels
    from keras_capsules.interpret import plot_arrows, plot_islands
    from keras_capsules.recipes.glom import get_glom_recipe, train_agreement_glom

    keras.utils.set_random_seed(args.seed)
    start = time.time()
    train_x, train_y = balanced_subset(*read_split(args.data_dir, "train"), args.train_per_class, args.seed)
    test_x, test_y = read_split(args.data_dir, "test")
    test_x, test_y = pad32(test_x[: args.test_images]), test_y[: args.test_images]

    recipe = get_glom_recipe("fashion_mnist").replace(batch_size=args.batch_size, learning_rate=args.learning_rate)
    model = AgreementGLOM(input_shape=(32, 32, 1), classes=10, embedding_dim=args.embedding_dim)
    tv_before, tv_code_before, _ = tv_per_level(model, test_x[:200], glom_levels, metrics, keras)
    steps = math.ceil(len(train_x) / args.batch_size)
    fit_start = time.time()
    histories = train_agreement_glom(
        model, (train_x, train_y), recipe=recipe, pretrain_epochs=args.pretrain_epochs,
        classifier_epochs=args.classifier_epochs, seed=args.seed, verbose=2,
    )
    fit_seconds = time.time() - fit_start
    probs = model.predict(test_x, batch_size=100, verbose=0)
    accuracy = float(np.mean(np.argmax(probs, -1) == test_y))
    tv_after, tv_code_after, levels = tv_per_level(model, test_x[:200], glom_levels, metrics, keras)

    os.makedirs(args.output, exist_ok=True)
    plot_islands(levels[0], os.path.join(args.output, "glom_fashion_mnist_islands.png"), image=test_x[0], titles=["bottom", "top"])
    plot_arrows(levels[0], os.path.join(args.output, "glom_fashion_mnist_arrows.png"), image=test_x[0], titles=["bottom", "top"])
    result = {
        "dataset": "fashion_mnist (real IDX files)",
        "train_images": int(len(train_x)),
        "test_images": int(len(test_x)),
        "image_size": "28x28 zero-padded to 32x32, 1 channel",
        "parameters": int(model.count_params()),
        "embedding_dim": args.embedding_dim,
        "batch_size": args.batch_size,
        "learning_rate": args.learning_rate,
        "pretrain_steps": steps * args.pretrain_epochs,
        "classifier_steps": steps * args.classifier_epochs,
        "supcon_loss": [round(float(v), 4) for v in histories["pretrain"].history["loss"]],
        "classifier_train_accuracy": [round(float(v), 4) for v in histories["classifier"].history["accuracy"]],
        "test_accuracy": round(accuracy, 4),
        "tv_n_per_level_before": tv_before,
        "tv_n_per_level_after": tv_after,
        "tv_n_code_per_level_before": tv_code_before,
        "tv_n_code_per_level_after": tv_code_after,
        "train_seconds": round(fit_seconds, 1),
        "total_seconds": round(time.time() - start, 1),
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "cpus": os.cpu_count(),
    }
    with open(os.path.join(args.output, "glom_fashion_mnist.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
