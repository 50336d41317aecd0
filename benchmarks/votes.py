"""Vote transforms at the papers' shapes: our layers against a plain ``einsum`` of the same product.

Times forward and forward + backward (gradients for poses and ``W``) of ``VectorVotes`` / ``MatrixVotes``
with one ``W`` per child-parent pair, under ``tf.function`` on the TensorFlow backend (each the median of
``--repeats`` calls after one that traces). The layers run the product as one batched matmul with the children
as the batch axis; the ``einsum`` column is the direct formulation they replaced.

Writes ``<results>/YYYY-MM-DD-HHMM-<host>-votes.json`` (rows of target ``"votes"`` for ``benchmarks/report.py``:
``case``, ``layer_forward_ms``, ``einsum_forward_ms``, ``layer_gradients_ms`` and ``einsum_gradients_ms``, ms to
one decimal) and, for the repository's own results folder, regenerates BENCHMARKS.md. Every case runs in this
one process: an error stops the run before a run file is written.

Usage: ``python -m benchmarks votes [--repeats 7]``
"""

import datetime
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchmarks.common import median_call_seconds  # noqa: E402
from benchmarks.runs import run_parser, write_run  # noqa: E402
from keras_capsules.layers import MatrixVotes, VectorVotes  # noqa: E402

DEFAULTS = dict(repeats=7)

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


def _timings(votes_of, poses, kernel, repeats):
    """(forward s, forward + backward s) of ``votes_of(poses)``, gradients for ``poses`` and ``kernel``."""

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

    return median_call_seconds(forward, repeats, warmup=1), median_call_seconds(forward_backward, repeats, warmup=1)


def rows_of(found):
    """``[(case, (layer forward s, layer forward + backward s), (einsum forward s, einsum forward + backward s))]``
    -> the run file's ``votes`` rows, ms to one decimal."""
    return [
        {
            "target": "votes",
            "case": case,
            "layer_forward_ms": round(1e3 * layer[0], 1),
            "einsum_forward_ms": round(1e3 * einsum[0], 1),
            "layer_gradients_ms": round(1e3 * layer[1], 1),
            "einsum_gradients_ms": round(1e3 * einsum[1], 1),
        }
        for case, layer, einsum in found
    ]


def write(args, span, found):
    """The run file of ``found`` (:func:`rows_of`); its path."""
    measured = (
        "each vote layer (one W per child-parent pair) and a plain tf.einsum of the same product under tf.function on "
        "the TensorFlow backend: the forward pass (sum of the votes) and forward + backward (gradients of the summed "
        f"squared votes for the poses and W), each the median of {args.repeats} calls after one that traces"
    )
    return write_run("votes", args, span, measured, rows_of(found), "votes")


def parser():
    return run_parser(__doc__, DEFAULTS)


def main(argv=None):
    args = parser().parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    found = []
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

        layer_s = _timings(layer, poses, layer.kernel.value, args.repeats)
        einsum_s = _timings(with_einsum, poses, kernel, args.repeats)
        found.append((name, layer_s, einsum_s))
        print(f"{name}: layer {layer_s}, einsum {einsum_s} (s)", file=sys.stderr, flush=True)
    ended = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return write(args, (started, ended), found)


if __name__ == "__main__":
    main()
