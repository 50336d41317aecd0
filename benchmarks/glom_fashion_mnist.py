"""Short Fashion-MNIST run of the agreement-aware GLOM: SupCon pre-training, then H2 on the frozen backbone.

Through ``keras_capsules.training.train``, with the ``AgreementGLOM``/``fashion_mnist`` two-stage recipe.

Reproduces the numbers reported in docs/results.md (accuracy, TV_n per level, run time) on a small subset of
the real Fashion-MNIST files. Configuration (documented choices, not the paper's CIFAR-10 settings):

- 28x28 images zero-padded to 32x32 by the ``glom_fashion_mnist`` preset (the 8x8 grid then splits
  into 2x2 windows of 4x4 for ``H_d``; a 7x7 grid would not), 1 channel;
- ``embedding_dim`` 64 instead of 128 so that a few hundred steps run on a laptop CPU;
- K = 2 levels, T = 4 iterations, CAE thresholds (0, -0.2), radius 3, ``w_td`` = 0.016385 (the code);
- the first ``--train-images`` training images, batch 32, peak learning rate 3e-3, and the stage
  epochs below instead of the recipe's 800 / 0.012 / 200.

Usage::

    python -m benchmarks glom_fashion_mnist --data-dir DATA_DIR   # or set KERAS_CAPSULES_DATA

Writes ``benchmarks/results/glom_fashion_mnist.json``, the training run (``glom_fashion_mnist_run/``)
and the island/arrow PNGs next to it.
"""

import argparse
import dataclasses
import json
import os
import time

import numpy as np


def tv_per_level(model, images, glom_levels, metrics, keras):
    levels, agreement = glom_levels(model, images, return_agreement=True, batch_size=100)
    paper = keras.ops.convert_to_numpy(metrics.tv_n(levels)).mean(0)
    code = keras.ops.convert_to_numpy(metrics.tv_n_code(agreement)).mean(0)
    return [round(float(v), 5) for v in paper], [round(float(v), 5) for v in code], levels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir", default=os.environ.get("KERAS_CAPSULES_DATA"), help="folder with the Fashion-MNIST IDX files"
    )
    parser.add_argument("--train-images", type=int, default=2000)
    parser.add_argument("--test-images", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--pretrain-epochs", type=int, default=5)
    parser.add_argument("--classifier-epochs", type=int, default=8)
    parser.add_argument("--embedding-dim", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = parser.parse_args()
    if not args.data_dir:
        parser.error("give --data-dir or set KERAS_CAPSULES_DATA to the folder with the Fashion-MNIST files")

    import keras

    from keras_capsules import datasets, metrics, recipes
    from keras_capsules.applications import AgreementGLOM
    from keras_capsules.applications.agreement_glom import glom_levels
    from keras_capsules.datasets.augment import pad_to
    from keras_capsules.interpret import plot_arrows, plot_islands
    from keras_capsules.saving import load_model
    from keras_capsules.training import train

    start = time.time()
    test_x, _ = datasets.load_arrays("fashion_mnist", "test", data_dir=args.data_dir)
    test_x = np.stack([pad_to(image, (32, 32)).numpy() for image in test_x[:200].astype("float32") / 255.0])
    keras.utils.set_random_seed(args.seed)
    untrained = AgreementGLOM(input_shape=(32, 32, 1), classes=10, embedding_dim=args.embedding_dim)
    tv_before, tv_code_before, _ = tv_per_level(untrained, test_x, glom_levels, metrics, keras)

    pretrain, classifier = recipes.get("AgreementGLOM", "fashion_mnist").stages
    run_dir = os.path.join(args.output, "glom_fashion_mnist_run")
    result = train(
        "AgreementGLOM",
        "fashion_mnist",
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        output=run_dir,
        data_dir=args.data_dir,
        limit=args.train_images,
        eval_limit=args.test_images,
        seed=args.seed,
        verbose=2,
        export=False,
        resume=False,
        model_kwargs={"embedding_dim": args.embedding_dim},
        stages=(
            dataclasses.replace(pretrain, epochs=args.pretrain_epochs),
            dataclasses.replace(classifier, epochs=args.classifier_epochs),
        ),
    )
    model = load_model(os.path.join(run_dir, "model.keras"), compile=False)
    tv_after, tv_code_after, levels = tv_per_level(model, test_x, glom_levels, metrics, keras)

    plot_islands(
        levels[0],
        os.path.join(args.output, "glom_fashion_mnist_islands.png"),
        image=test_x[0],
        titles=["bottom", "top"],
    )
    plot_arrows(
        levels[0], os.path.join(args.output, "glom_fashion_mnist_arrows.png"), image=test_x[0], titles=["bottom", "top"]
    )
    history = result["history"]
    summary = {
        "dataset": "fashion_mnist (real IDX files)",
        "train_images": args.train_images,
        "test_images": args.test_images,
        "image_size": "28x28 zero-padded to 32x32, 1 channel",
        "parameters": result["parameters"],
        "embedding_dim": args.embedding_dim,
        "batch_size": args.batch_size,
        "learning_rate": args.learning_rate,
        "pretrain_steps": result["steps_per_epoch"] * args.pretrain_epochs,
        "classifier_steps": result["steps_per_epoch"] * args.classifier_epochs,
        "supcon_loss": [round(v, 4) for v in history["pretrain_loss"]],
        "classifier_train_accuracy": [round(v, 4) for v in history["accuracy"]],
        "test_accuracy": round(result["test_accuracy"], 4),
        "tv_n_per_level_before": tv_before,
        "tv_n_per_level_after": tv_after,
        "tv_n_code_per_level_before": tv_code_before,
        "tv_n_code_per_level_after": tv_code_after,
        "train_seconds": result["train_seconds"],
        "total_seconds": round(time.time() - start, 1),
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "cpus": os.cpu_count(),
    }
    with open(os.path.join(args.output, "glom_fashion_mnist.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
