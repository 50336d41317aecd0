"""``first_step_backbone``'s table: an application's first step against its backbone's alone."""

from benchmarks.reporting.cells import col, num

#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="first-step-backbone",
        heading="First step: the application against its backbone alone",
        rows=("first-step-backbone",),
        intro="`benchmarks/first_step_backbone.py`: the first `train_on_batch` (tracing included) of the application and of its "
        "layers up to its backbone's last layer with a pooled dense head (the same convolutions without the capsules), "
        "fresh processes alternating; each process's first step, in the order run, and the median of the next step.",
        columns=[
            col("application"),
            col("model"),
            col("cut", "backbone up to"),
            col("input"),
            col("batch", "> batch"),
            col("layers", "> layers"),
            ("> first step (s), each process", lambda row: " · ".join(num(v) for v in row["first_step_s"])),
            col("step_s", "> step (s)"),
        ],
    ),
]
