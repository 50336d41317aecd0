"""``applications``'s table and target: the applications' parameters, step, inference and peak memory."""

from benchmarks.reporting.cells import col
from benchmarks.reporting.verdicts import max_item

#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="applications",
        heading=None,
        rows=("applications",),
        filter=lambda r: "cifar100" in r["configuration"],
        intro="The CIFAR-100 configurations at b32 (the run file has all 26 applications):",
        columns=[
            col("configuration"),
            col("parameters", "> parameters"),
            col("train_ms", "> training step (ms)"),
            col("infer_ms", "> inference (ms / batch of 64)"),
            col("rss_mib", "> peak RSS (MiB)"),
        ],
    ),
]

#: The targets read from them (:func:`benchmarks.reporting.verdicts.verdict_rows`).
VERDICTS = [
    dict(
        target="CIFAR-100 configurations under 8 GB at b32",
        rows="applications",
        items=max_item("rss_mib", lambda r: "cifar100" in r["configuration"], "MiB"),
        bound=("<", 8192),
        table="applications",
    ),
]
