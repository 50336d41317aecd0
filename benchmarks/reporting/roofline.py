"""``roofline``'s table: how close each router runs to the machine's roofs."""

from benchmarks.reporting.cells import col

#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="roofline",
        heading="Roofline of the routers",
        rows=("roofline",),
        intro="`benchmarks/roofline.py`: each router alone, forward and backward, at the shapes an application routes at "
        "64x64x3 batch 16 (a convolutional layer one output row at a time, as it trains). Work from XLA's cost analysis "
        "under JAX (the library's graph counter beside it); time on TensorFlow with `jit_compile` off (plain) and on "
        "(XLA); attainable = min(matrix-product GFLOP/s, bandwidth x flop per byte), both roofs measured in the run; "
        "share = achieved / attainable. XLA's bytes are its count of every fused operation's operands and results, "
        "not what reaches memory: a share over 100 % means the caches served part of them, so the shares bound the "
        "routers' distance from the memory roof from above, not below. The kernel router's XLA flops include the "
        "polynomial cosine's arithmetic (JAX compiles it; the graph counts each cosine once).",
        columns=[
            col("case"),
            ("votes", lambda row: "x".join(map(str, row["votes"]))),
            ("> GFLOP, XLA · graph", lambda row: f"{row['xla_gflop']:.2f} · {row['graph_gflop']:.2f}"),
            ("> G transcendental", lambda row: f"{row['xla_transcendental_g']:.3f}"),
            ("> GB", lambda row: f"{row['xla_gbytes']:.2f}"),
            ("> flop/B", lambda row: f"{row['intensity_flop_per_byte']:.2f}"),
            ("> roofs GFLOP/s · GB/s", lambda row: f"{row['matmul_gflops']:.0f} · {row['bandwidth_gbs']:.1f}"),
            ("> attainable GFLOP/s", lambda row: f"{row['attainable_gflops']:.1f}"),
            ("> ms, plain · XLA", lambda row: f"{row['plain_ms']:.0f} · {row['xla_ms']:.0f}"),
            ("> share, plain · XLA", lambda row: f"{100 * row['plain_share']:.0f} % · {100 * row['xla_share']:.0f} %"),
        ],
    ),
]
