"""``attack_memory``'s table: the attacks' estimated gradient memory against the measured peak, and the batch planned."""

from benchmarks.reporting.cells import col, megabytes, ratio_of

#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="attack-memory",
        heading="Adversarial attacks: planned batch",
        rows=("attack-memory",),
        intro="`keras_capsules.evaluation.attack_memory.estimated_peak_bytes` (the loss gradient with respect to the images, "
        "traced, not run; process baseline included) against the peak resident memory of a fresh process that opens the "
        "preset and runs FGSM's one gradient call on that many images; one process per row, each alone. *Planned at "
        "8 GB*: the batch `batch_size=None` chooses for 10,000 images with 8 GB to use (its estimate within "
        "`attack_memory.SHARE` of that). A row whose estimate exceeds the memory free less 3 GB is not run.",
        columns=[
            col("preset"),
            col("batch", "> batch"),
            ("> estimate (MB)", megabytes("estimate_bytes")),
            ("> measured peak (MB)", megabytes("measured_bytes")),
            ("> estimate / measured", ratio_of("estimate_bytes", "measured_bytes")),
            col("planned_8gb", "> planned at 8 GB"),
            ("note", lambda row: row.get("skipped") or row.get("error") or ""),
        ],
    ),
]
