"""Where Efficient-CapsNet's inference time goes at batch 64, and what is left to gain (TensorFlow backend).

Times, interleaved in one process (``--rounds`` rounds; in each, ``--repeats`` calls of every variant
after ``--warmup`` untimed ones; the figure is the median over the rounds of each round's median):

- ``EffCapsNet().predict_on_batch`` (what the side-by-side harness times), the reference the table's
  shares divide by;
- ``the same network through one tf.function`` (``model(x, training=False)``), without Keras' per-call
  ``predict`` machinery;
- ``bn1-bn3 folded into the next convolution``: as the one above, with ``bn1``-``bn3`` folded into the next
  convolution (``conv(a * h + b, W) = conv(h, W * a) + sum(W * b)``, exact for "valid" padding; ``bn4``
  kept), checked against the unfolded network's output (the run stops if they differ by more than 1e-4);
- ``conv1-conv4 with their ReLU only``: no batch norm, no capsule layers: the floor for any implementation
  that makes the same convolutions.

Writes ``<results>/YYYY-MM-DD-HHMM-<host>-eff-capsnet-inference-floor.json`` (rows of target ``"effcaps-floor"``
for ``benchmarks/report.py``: ``variant`` and ``ms`` per batch, in the order above; the run's ``batch`` and
``folded_max_abs_diff``) and, for the repository's own results folder, regenerates BENCHMARKS.md. Time only
on an otherwise idle machine; the ratios between rows are what carries over.

Usage: ``python -m benchmarks eff_capsnet_inference_floor [--batch 64] [--rounds 5] [--repeats 30] [--warmup 5]``
"""

import datetime
import os
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.runs import run_parser, write_run  # noqa: E402

REFERENCE = "EffCapsNet().predict_on_batch"
COMPILED = "the same network through one tf.function"
FOLDED = "bn1-bn3 folded into the next convolution"
CONVOLUTIONS = "conv1-conv4 with their ReLU only"
DEFAULTS = dict(batch=64, rounds=5, repeats=30, warmup=5)


def folded_convolution(conv, norm):
    """A Conv2D equal to ``conv`` applied after the batch norm ``norm`` (inference statistics), for "valid" padding."""
    import keras
    import numpy as np

    gamma, beta, mean, variance = (np.asarray(w) for w in norm.get_weights())
    scale = gamma / np.sqrt(variance + norm.epsilon)  # (in_channels,)
    shift = beta - mean * scale
    kernel, bias = (np.asarray(w) for w in conv.get_weights())  # (kh, kw, in, out), (out,)
    folded = keras.layers.Conv2D(
        conv.filters, conv.kernel_size, strides=conv.strides, padding=conv.padding, activation=conv.activation
    )
    folded.build((None, None, None, kernel.shape[2]))
    folded.set_weights([kernel * scale[None, None, :, None], bias + np.einsum("hwio,i->o", kernel, shift)])
    return folded


def variants(model):
    """The timed callables, by name (see the module docstring)."""
    import tensorflow as tf

    layer = model.get_layer
    folds = {i: folded_convolution(layer(f"conv{i}"), layer(f"bn{i - 1}")) for i in (2, 3, 4)}
    tail = [layer(name) for name in ("bn4", "primary_caps", "class_caps", "length", "predictions")]

    def folded_network(x):
        h = layer("conv1")(x)
        for i in (2, 3, 4):
            h = folds[i](h)
        for block in tail:
            h = block(h)
        return h

    def convolutions(x):
        for i in (1, 2, 3, 4):
            x = layer(f"conv{i}")(x)
        return x

    return {
        REFERENCE: model.predict_on_batch,
        COMPILED: tf.function(lambda x: model(x, training=False)),
        FOLDED: tf.function(folded_network),
        CONVOLUTIONS: tf.function(convolutions),
    }


def rows_of(medians):
    """``{variant: each round's median seconds}`` (the reference first) -> the run file's rows: per variant the
    median over the rounds, ms per batch."""
    return [
        {"target": "effcaps-floor", "variant": variant, "ms": round(1e3 * statistics.median(seconds), 2)}
        for variant, seconds in medians.items()
    ]


def write(args, span, medians, error):
    """The run file of ``medians`` (:func:`rows_of`), the folded network differing by ``error``; its path."""
    measured = (
        f"Efficient-CapsNet inference at b{args.batch} (28x28x1, random weights and batch-norm statistics), "
        f"{args.rounds} interleaved rounds of {args.repeats} calls per variant after {args.warmup} warm-up calls, in "
        "one process; per variant the median over the rounds of each round's median, ms per batch"
    )
    return write_run(
        "eff_capsnet_inference_floor",
        args,
        span,
        measured,
        rows_of(medians),
        "eff-capsnet-inference-floor",
        batch=args.batch,
        folded_max_abs_diff=error,
    )


def main(argv=None):
    args = parser().parse_args(argv)

    import numpy as np

    from benchmarks.common import median_call_seconds
    from keras_capsules import applications

    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    model = applications.EffCapsNet()
    x = np.random.default_rng(0).uniform(size=(args.batch, 28, 28, 1)).astype("float32")
    # Non-trivial batch-norm statistics, so that the folding check below means something.
    rng = np.random.default_rng(1)
    for i in (1, 2, 3, 4):
        norm = model.get_layer(f"bn{i}")
        gamma, beta, mean, variance = norm.get_weights()
        norm.set_weights(
            [
                rng.uniform(0.5, 1.5, gamma.shape),
                rng.normal(0, 0.1, beta.shape),
                rng.normal(0, 0.1, mean.shape),
                rng.uniform(0.5, 1.5, variance.shape),
            ]
        )
    calls = variants(model)
    reference = np.asarray(model.predict_on_batch(x))
    error = float(np.max(np.abs(np.asarray(calls[FOLDED](x)) - reference)))
    if error > 1e-4:
        raise SystemExit(f"eff_capsnet_inference_floor: the folded network differs from the model by {error:.3g}")
    print(f"batch {args.batch}; folded output max |diff| {error:.2g}", file=sys.stderr, flush=True)

    for call in calls.values():
        for _ in range(args.warmup):
            call(x)
    medians = {name: [] for name in calls}
    for round_ in range(args.rounds):
        for name, call in calls.items():
            medians[name].append(median_call_seconds(lambda: np.asarray(call(x)), args.repeats))
        figures = ", ".join(f"{name} {1e3 * values[-1]:.2f} ms" for name, values in medians.items())
        print(f"round {round_ + 1}/{args.rounds}: {figures}", file=sys.stderr, flush=True)
    ended = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return write(args, (started, ended), medians, error)


def parser():
    return run_parser(__doc__, DEFAULTS)


if __name__ == "__main__":
    main()
