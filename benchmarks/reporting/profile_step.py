"""``profile_step``'s tables: where a training step's time goes, by op type, and DR-CapsNet's step by part."""

from benchmarks.reporting.cells import col, r2, ratio

#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="dr-rem-profile",
        heading=None,
        rows=("dr-rem-profile",),
        intro="Where our step goes (`benchmarks/profile_step.py CapsNet/mnist-official-bias --batch 128`, TensorFlow's "
        "profiler, which slows the step; the shares are what counts): the convolution that makes the primary "
        "capsules sets the floor, its input gradient the largest kernel.",
        columns=[
            col("part"),
            col("ms", "> ms per profiled step"),
            ("> share", lambda row: f"{100 * row['share']:.1f} %"),
        ],
    ),
    dict(
        key="profile-step",
        heading="Profile of the slowest applications",
        rows=("profile-step",),
        intro="`benchmarks/profile_step.py` (TensorFlow's profiler, which slows the step; op time is the host's self time "
        "of the ops it traces, the shares are what counts) and `benchmarks/training_step_cost.py` (counted GFLOP per "
        "image and flops per float32 byte written, from the traced graph) on the same package: one training step at "
        "batch 16, RGB; the package of each row named (before the chunking work, at the HEAD of its day, with a change). Step "
        'and first step (tracing included) from the profiling process; each run\'s `measured` (in "The runs") says '
        "what else the machine ran: compare the rows of one run with each other, not across runs.",
        columns=[
            col("configuration"),
            col("input"),
            col("package"),
            col("step_ms", "> step (ms)"),
            col("first_step_s", "> first step (s)"),
            col("gflop_per_image", "> GFLOP / image"),
            (
                "> GFLOP/s",
                lambda row: r2(
                    ratio(row["gflop_per_image"] and row["gflop_per_image"] * row["batch"] * 1e3, row["step_ms"])
                ),
            ),
            col("graph_ops", "> ops in the step's graph"),
            col("flops_per_byte", "> flops / byte written"),
            (
                "largest op types (share of the profiled op time)",
                lambda row: " · ".join(f"{name} {100 * share:.0f} %" for name, share in row["op_types"][:8]),
            ),
        ],
    ),
]
