"""``concurrent_iterations``'s table: InvertedAttentionCapsNet's step by routing iterations, ours alone."""

from benchmarks.reporting.cells import col

#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="idpa-iterations",
        heading=None,
        rows=("idpa-iterations",),
        intro="Ours alone at 1–5 iterations in one run (`benchmarks/concurrent_iterations.py`, processes alternating): "
        "the increments should be equal from 4 iterations on, where each iteration adds one sweep of all three "
        "capsule layers; below that the second and first ConvCaps layers start forming their votes "
        "(at 3 and 4 iterations).",
        columns=[
            col("iterations", "> iterations"),
            col("ours_ms", "> ours (ms)"),
            col("increment_ms", "> increment (ms)"),
        ],
    ),
]
