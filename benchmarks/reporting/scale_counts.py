"""``scale_counts``'s table: what a training step counts at larger inputs."""

from benchmarks.reporting.cells import col

#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="step-cost",
        heading="What a training step counts at larger inputs",
        rows=("step-cost",),
        intro="`benchmarks/scale_counts.py`: one training step of each application (the configuration of the scale runs, 10 "
        "classes, RGB), traced and counted from its graph by `benchmarks/training_step_cost.py`'s counter: arithmetic, "
        "transcendental elements (`exp`, `cos`, ...: one flop each in the GFLOP, many multiply-adds each in time), "
        "float32 elements written, and flops per byte written (the lower, the more the step is bound by memory "
        "traffic); counts of the graph, the same on any machine.",
        columns=[
            col("application"),
            col("input"),
            col("batch", "> batch"),
            col("gflop_per_image", "> GFLOP / image"),
            col("m_transcendental_per_image", "> M transcendental / image"),
            col("m_written_per_image", "> M written / image"),
            ("> GB written per step", lambda row: f"{4 * row['m_written_per_image'] * row['batch'] / 1e3:,.1f}"),
            col("flops_per_byte", "> flops / byte written"),
            col("graph_ops", "> ops in the graph"),
            (
                "largest op types (MFLOP / image)",
                lambda row: " · ".join(f"{t['op_type']} {t['mflop_per_image']:,.0f}" for t in row["op_types"][:6]),
            ),
        ],
    ),
]
