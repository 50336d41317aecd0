"""``cpu_allocator``'s table: training steps with ``malloc`` and with TensorFlow's pooling (BFC) CPU allocator."""

from benchmarks.reporting.cells import col

#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="cpu-allocator",
        heading="Training steps with malloc and with TensorFlow's pooling CPU allocator",
        rows=("cpu-allocator",),
        intro="`benchmarks/cpu_allocator.py`: the command line asks TensorFlow for its BFC allocator "
        "(`TF_CPU_ALLOCATOR_USE_BFC=true`); with `malloc`, every block above 32 MB is mapped afresh each step and "
        "faults page by page. Kernel CPU seconds and minor faults are per step.",
        columns=[
            col("case"),
            col("setting"),
            col("median_ms", "> median step (ms)"),
            col("process_ms", "per process (ms)"),
            col("system_s", "> kernel CPU (s)"),
            col("faults_k", "> minor faults (k)"),
            col("peak_rss_mib", "> peak RSS (MiB)"),
            col("malloc_over_bfc", "> malloc / BFC"),
        ],
    ),
]
