"""Efficient-CapsNet training step and inference against a plain Keras CNN with the same parameter count.

Usage: ``python -m benchmarks eff_capsnet_vs_cnn`` (2-core CPU: about 2 minutes). Prints a Markdown
table for BENCHMARKS.md and writes ``benchmarks/results/eff_capsnet_vs_cnn.json``.
Reference (the target this benchmark was written for): the authors' TF implementation of Efficient-CapsNet takes about 74 ms / 222 ms
per training step at batch 16 / 64 and 22 ms per inference batch of 64 on a 2-core CPU.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.common import machine_description, time_fit_step, time_inference, write_results  # noqa: E402
from keras_capsules import applications, losses  # noqa: E402


def plain_cnn(target_params, classes=10):
    """Efficient-CapsNet's convolutional stem + Dense(k) + Dense(classes), with k chosen to match ``target_params``."""

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


def main():
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(256, 28, 28, 1)).astype("float32")
    y = rng.integers(0, 10, 256)
    caps = applications.EffCapsNet(reconstruction=True)
    caps.compile(optimizer=keras.optimizers.Adam(5e-4), loss=losses.MarginLoss())
    cnn = plain_cnn(caps.count_params())
    cnn.compile(optimizer=keras.optimizers.Adam(5e-4), loss="sparse_categorical_crossentropy")
    rows = []
    for batch in (16, 64):
        t_caps = time_fit_step(caps, x, y, batch)
        t_cnn = time_fit_step(cnn, x, y, batch)
        rows.append({"what": f"training step, batch {batch}", "eff_capsnet_ms": 1e3 * t_caps, "cnn_ms": 1e3 * t_cnn})
    t_caps = time_inference(caps, x, 64)
    t_cnn = time_inference(cnn, x, 64)
    rows.append({"what": "inference, batch 64", "eff_capsnet_ms": 1e3 * t_caps, "cnn_ms": 1e3 * t_cnn})
    for row in rows:
        row["ratio"] = row["eff_capsnet_ms"] / row["cnn_ms"]
    payload = {
        "machine": machine_description(),
        "eff_capsnet_params": caps.count_params(),
        "cnn_params": cnn.count_params(),
        "rows": rows,
        "reference_ms": {"training step, batch 16": 74, "training step, batch 64": 222, "inference, batch 64": 22},
    }
    write_results("eff_capsnet_vs_cnn", payload)
    print(f"Machine: {payload['machine']}")
    print(
        f"EffCapsNet with decoder: {payload['eff_capsnet_params']:,} parameters; plain CNN: {payload['cnn_params']:,}\n"
    )
    print("| measurement | EffCapsNet (ms) | plain CNN (ms) | ratio | reference TF Efficient-CapsNet (ms) |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        ref = payload["reference_ms"][row["what"]]
        print(f"| {row['what']} | {row['eff_capsnet_ms']:.1f} | {row['cnn_ms']:.1f} | {row['ratio']:.2f}x | {ref} |")


if __name__ == "__main__":
    main()
