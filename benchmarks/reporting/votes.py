"""``votes``'s table: the vote layers against a plain ``einsum`` of the same product."""

from benchmarks.reporting.cells import col, ratio_of

#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="votes",
        heading="Vote layers",
        rows=("votes",),
        intro="`VectorVotes` / `MatrixVotes` (one W per child-parent pair, one batched matmul) against a plain "
        "`tf.einsum` of the same product, under `tf.function`: the forward pass and forward + backward.",
        columns=[
            col("case", "vote transform"),
            col("layer_forward_ms", "> layer forward (ms)"),
            col("einsum_forward_ms", "> einsum forward (ms)"),
            ("> layer / einsum forward", ratio_of("layer_forward_ms", "einsum_forward_ms")),
            col("layer_gradients_ms", "> layer forward + backward (ms)"),
            col("einsum_gradients_ms", "> einsum forward + backward (ms)"),
            ("> layer / einsum forward + backward", ratio_of("layer_gradients_ms", "einsum_gradients_ms")),
        ],
    ),
]
