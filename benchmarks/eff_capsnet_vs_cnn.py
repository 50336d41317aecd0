"""Efficient-CapsNet training step and inference against a plain Keras CNN with the same parameter count.

``EffCapsNet(reconstruction=True)`` (Adam, the margin loss) against Efficient-CapsNet's convolutional stem
+ Dense + softmax with the width that matches its parameter count (Adam, cross-entropy), in one process at
28x28x1: the median ``model.fit`` step at batch 16 and 64 (after five steps that include tracing) and the
median ``predict_on_batch`` at batch 64.

Writes ``<results>/YYYY-MM-DD-HHMM-<host>-eff-capsnet-vs-cnn.json`` (rows of target ``"effcaps-vs-cnn"`` for
``benchmarks/report.py``: ``configuration``, e.g. ``"training step, b16"``, ``effcaps_ms`` and ``cnn_ms``; the
run's ``effcaps_parameters`` and ``cnn_parameters``) and, for the repository's own results folder,
regenerates BENCHMARKS.md. 2-core CPU: about 2 minutes. Reference (the target this benchmark was written
for): the authors' TF implementation of Efficient-CapsNet takes about 74 ms / 222 ms per training step at
batch 16 / 64 and 22 ms per inference batch of 64 on a 2-core CPU.

Usage: ``python -m benchmarks eff_capsnet_vs_cnn``
"""

import datetime
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.runs import run_parser, write_run  # noqa: E402

TRAINING_BATCHES = (16, 64)
INFERENCE_BATCH = 64


def plain_cnn(target_params, classes=10):
    """Efficient-CapsNet's convolutional stem + Dense(k) + Dense(classes), with k chosen to match ``target_params``."""
    import keras

    def build(hidden):
        inputs = keras.Input((28, 28, 1))
        x = inputs
        for filters, kernel, stride in ((32, 5, 1), (64, 3, 1), (64, 3, 1), (128, 3, 2)):
            x = keras.layers.Conv2D(filters, kernel, strides=stride, activation="relu")(x)
            x = keras.layers.BatchNormalization()(x)
        x = keras.layers.Flatten()(x)
        x = keras.layers.Dense(hidden, activation="relu")(x)
        return keras.Model(inputs, keras.layers.Dense(classes, activation="softmax")(x), name=f"cnn_{hidden}")

    base = build(1).count_params()
    per_unit = build(2).count_params() - base
    return build(max(1, round(1 + (target_params - base) / per_unit)))


def rows_of(found):
    """``[(what, batch, EffCapsNet seconds, CNN seconds)]`` -> the run file's rows, ms."""
    return [
        {
            "target": "effcaps-vs-cnn",
            "configuration": f"{what}, b{batch}",
            "effcaps_ms": round(1e3 * caps, 1),
            "cnn_ms": round(1e3 * cnn, 1),
        }
        for what, batch, caps, cnn in found
    ]


def write(args, span, found, effcaps_parameters, cnn_parameters):
    """The run file of ``found`` (:func:`rows_of`); its path."""
    measured = (
        f"EffCapsNet(reconstruction=True) ({effcaps_parameters:,} parameters) against a CNN with its convolutional "
        f"stem + Dense + softmax ({cnn_parameters:,} parameters), 28x28x1, in one process: the median model.fit step "
        f"at batch {' and '.join(map(str, TRAINING_BATCHES))} (30 steps after 5 that include tracing) and the median "
        f"predict_on_batch at batch {INFERENCE_BATCH} (20 calls after 3), ms"
    )
    return write_run(
        "eff_capsnet_vs_cnn",
        args,
        span,
        measured,
        rows_of(found),
        "eff-capsnet-vs-cnn",
        effcaps_parameters=effcaps_parameters,
        cnn_parameters=cnn_parameters,
    )


def main(argv=None):
    args = parser().parse_args(argv)

    import keras
    import numpy as np

    from benchmarks.common import time_fit_step, time_inference
    from keras_capsules import applications, losses

    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(256, 28, 28, 1)).astype("float32")
    y = rng.integers(0, 10, 256)
    caps = applications.EffCapsNet(reconstruction=True)
    caps.compile(optimizer=keras.optimizers.Adam(5e-4), loss=losses.MarginLoss())
    cnn = plain_cnn(caps.count_params())
    cnn.compile(optimizer=keras.optimizers.Adam(5e-4), loss="sparse_categorical_crossentropy")
    timers = [("training step", b, lambda model, b=b: time_fit_step(model, x, y, b)) for b in TRAINING_BATCHES]
    timers.append(("inference", INFERENCE_BATCH, lambda model: time_inference(model, x, INFERENCE_BATCH)))
    found = []
    for what, batch, timer in timers:
        found.append((what, batch, timer(caps), timer(cnn)))
        print(
            f"{what}, b{batch}: EffCapsNet {1e3 * found[-1][2]:.1f} ms, CNN {1e3 * found[-1][3]:.1f} ms",
            file=sys.stderr,
            flush=True,
        )
    ended = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return write(args, (started, ended), found, caps.count_params(), cnn.count_params())


def parser():
    return run_parser(__doc__, {})


if __name__ == "__main__":
    main()
