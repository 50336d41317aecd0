"""``recompute``'s table: training steps rematerialising and as the memory plan chooses."""

from benchmarks.reporting.cells import col

#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="recompute",
        heading="Training steps with and without rematerialisation",
        rows=("recompute",),
        intro="`benchmarks/recompute.py`: `train(recompute='auto')`, the default, trains without rematerialisation when "
        "the memory plan finds that the step fits in three quarters of the memory available. Kernel CPU seconds and "
        "minor faults are per step.",
        columns=[
            col("case"),
            col("setting"),
            col("recompute", "rematerialised"),
            col("median_ms", "> median step (ms)"),
            col("process_ms", "per process (ms)"),
            col("system_s", "> kernel CPU (s)"),
            col("faults_k", "> minor faults (k)"),
            col("peak_rss_mib", "> peak RSS (MiB)"),
            col("on_over_auto", "> on / auto"),
        ],
    ),
]
