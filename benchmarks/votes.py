"""Vote transforms at the papers' shapes: our layers against a plain ``einsum`` of the same product.

Times forward and forward + backward (gradients for poses and ``W``) of ``VectorVotes`` / ``MatrixVotes``
with one ``W`` per child-parent pair, under ``tf.function`` on the TensorFlow backend. The layers run
the product as one batched matmul with the children as the batch axis; the ``einsum`` column is the
direct formulation they replaced.
Usage: ``python -m benchmarks votes``; writes ``benchmarks/results/votes.json`` and prints a Markdown table.
"""

import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchmarks.common import machine_description, write_results  # noqa: E402
from keras_capsules.layers import MatrixVotes, VectorVotes  # noqa: E402

#: name -> (layer, input shape (rows, in_caps, in_dim), einsum of (poses viewed as in the layer, W)).
CASES = {
    "CapsNet class capsules: 1152 x 8D -> 10 x 16D, batch 64": (VectorVotes(10, 16), (64, 1152, 8), "bid,iode->bioe"),
    "InvertedAttentionCapsNet conv capsules: 3x3x32 children x 4x4 -> 32 types, batch 32 x 49 positions": (
        MatrixVotes(32, side="right"),
        (32 * 49, 288, 16),
        "bixy,ioyz->bioxz",
    ),
    "ConsensusCapsNet conv capsules: 3x3x16 children x 4x4 -> 16 types, batch 32 x 49 positions (W P)": (
        MatrixVotes(16, side="left"),
        (32 * 49, 144, 16),
        "ioxy,biyz->bioxz",
    ),
}


def _median_ms(function, repeats=7):
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def _timings(votes_of, poses, kernel):
    """(forward ms, forward + backward ms) of ``votes_of(poses)``, gradients for ``poses`` and ``kernel``."""

    @tf.function
    def forward():
        return tf.reduce_sum(votes_of(poses))

    @tf.function
    def forward_backward():
        with tf.GradientTape() as tape:
            tape.watch(poses)
            votes = votes_of(poses)
            loss = tf.reduce_sum(votes * votes)
        return tape.gradient(loss, [poses, kernel])

    return _median_ms(forward), _median_ms(forward_backward)


def main():
    rows = []
    for name, (layer, shape, equation) in CASES.items():
        poses = tf.constant(np.random.default_rng(0).normal(size=shape).astype("float32"))
        layer.build(shape)
        kernel = tf.Variable(layer.kernel.numpy())
        side = getattr(layer, "pose_side", None)

        def with_einsum(poses, equation=equation, side=side, kernel=kernel):
            if side is None:
                return tf.einsum(equation, poses, kernel)
            matrices = tf.reshape(poses, (shape[0], shape[1], side, side))
            operands = (matrices, kernel) if equation.startswith("b") else (kernel, matrices)
            return tf.einsum(equation, *operands)

        rows.append(
            {
                "case": name,
                "layer_ms": _timings(layer, poses, layer.kernel.value),
                "einsum_ms": _timings(with_einsum, poses, kernel),
            }
        )
        print(rows[-1], flush=True)
    machine = machine_description()
    write_results("votes", {"machine": machine, "rows": rows})
    print(f"\nMachine: {machine}\n")
    print("| vote transform | layer forward (ms) | einsum forward (ms) | layer fwd+bwd (ms) | einsum fwd+bwd (ms) |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        (lf, lb), (ef, eb) = row["layer_ms"], row["einsum_ms"]
        print(f"| {row['case']} | {lf:.1f} | {ef:.1f} | {lb:.1f} | {eb:.1f} |")


if __name__ == "__main__":
    main()
