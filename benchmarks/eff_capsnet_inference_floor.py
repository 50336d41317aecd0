"""Where Efficient-CapsNet's inference time goes at batch 64, and what is left to gain (TensorFlow backend).

Times, interleaved in one process (``--rounds`` rounds; in each, ``--repeats`` calls of every variant
after a warm-up; the figure is the median over the rounds of each round's median):

- ``predict_on_batch``: ``EffCapsNet().predict_on_batch`` (what the side-by-side harness times);
- ``compiled call``: the same network through one ``tf.function`` (``model(x, training=False)``),
  without Keras' per-call ``predict`` machinery;
- ``batch norms folded``: as ``compiled call``, with ``bn1``-``bn3`` folded into the next convolution
  (``conv(a * h + b, W) = conv(h, W * a) + sum(W * b)``, exact for "valid" padding; ``bn4`` kept),
  checked against the unfolded network's output;
- ``convolutions only``: ``conv1``-``conv4`` with their ReLU, no batch norm, no capsule layers: the
  floor for any implementation that makes the same convolutions.

Usage: ``python -m benchmarks eff_capsnet_inference_floor [--batch 64] [--rounds 5] [--repeats 30]``; writes
``benchmarks/results/eff_capsnet_inference_floor.json``.
Time only on an otherwise idle machine; the ratios between rows are what carries over.
"""

import argparse
import os
import statistics

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


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
        "predict_on_batch": model.predict_on_batch,
        "compiled call": tf.function(lambda x: model(x, training=False)),
        "batch norms folded": tf.function(folded_network),
        "convolutions only": tf.function(convolutions),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args(argv)

    import numpy as np

    from benchmarks.common import machine_description, median_call_seconds, write_results
    from keras_capsules import applications

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
    folded = np.asarray(calls["batch norms folded"](x))
    error = float(np.max(np.abs(folded - reference)))
    if error > 1e-4:
        raise SystemExit(f"folded network differs from the model by {error:.3g}")

    for call in calls.values():
        for _ in range(args.warmup):
            call(x)
    medians = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, call in calls.items():
            medians[name].append(median_call_seconds(lambda: np.asarray(call(x)), args.repeats))
    machine = machine_description()
    print(f"# {machine}; batch {args.batch}; folded output max |diff| {error:.2g}")
    base = statistics.median(medians["predict_on_batch"])
    rows = [
        {
            "variant": name,
            "ms": 1000 * statistics.median(values),
            "share": statistics.median(values) / base,
            "round_medians_ms": [1000 * value for value in values],
        }
        for name, values in medians.items()
    ]
    write_results(
        "eff_capsnet_inference_floor",
        {"machine": machine, "batch": args.batch, "folded_max_abs_diff": error, "rows": rows},
    )
    print("| variant | ms per batch | share of predict_on_batch |")
    print("|---|---:|---:|")
    for row in rows:
        print(f"| {row['variant']} | {row['ms']:.2f} | {row['share']:.2f} |")


if __name__ == "__main__":
    main()
