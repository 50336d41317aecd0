"""``memory_plan``'s tables and target: the memory plan's estimate against the measured peak, and the run
its constants were fitted on."""

from benchmarks.reporting.cells import col, megabytes, r2, ratio_of


def memory_plan_items(rows):
    pairs = [(row, row["estimate_bytes"] / row["measured_bytes"]) for row in rows if row.get("measured_bytes")]
    if not pairs:
        return []
    low, high = min(pairs, key=lambda p: p[1]), max(pairs, key=lambda p: p[1])
    skipped = sum(1 for row in rows if row.get("skipped"))
    label = lambda p: f"{r2(p[1])} ({p[0]['configuration']} {p[0]['input']} b{p[0]['batch']})"  # noqa: E731
    return [
        (
            "",
            [abs(v - 1) for _, v in pairs],
            f"estimate / measured from {label(low)} to {label(high)} over {len(pairs)} "
            f"measured configurations" + (f"; {skipped} refused by the estimate, not run" if skipped else ""),
        )
    ]


#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="memory-plan",
        heading="Memory plan: estimate against measured peak",
        rows=("memory-plan",),
        intro="`keras_capsules.training.memory_plan.estimate` (one traced step, no step run; process baseline included) against "
        "the peak resident memory of a fresh process that builds and compiles the model as `train` does and runs three "
        "`train_on_batch` steps; one process per row, each alone. A row whose estimate exceeds 16 GB is not run "
        "(what `memory_plan.check` refuses).",
        columns=[
            col("configuration"),
            col("input"),
            col("batch", "> batch"),
            ("> estimate (MB)", megabytes("estimate_bytes")),
            (
                "> of which activations / votes (MB)",
                lambda row: f"{megabytes('activation_bytes')(row)} / {megabytes('votes_bytes')(row)}",
            ),
            ("> measured peak (MB)", megabytes("measured_bytes")),
            ("> estimate / measured", ratio_of("estimate_bytes", "measured_bytes")),
            ("note", lambda row: row.get("skipped") or row.get("error") or ""),
        ],
    ),
    dict(
        key="memory-plan-calibration",
        heading=None,
        rows=("memory-plan-calibration",),
        intro="The calibration run the two constants `LIVE_FACTOR` and `BYTES_PER_OP` were fitted on (its file's `fit`; least "
        "squares on the relative error), at other batches than the table above; live tensors: the simulated step's peak.",
        columns=[
            col("configuration"),
            col("input"),
            col("batch", "> batch"),
            ("> live tensors (MB)", megabytes("step_live_bytes")),
            col("step_ops", "> ops"),
            ("> measured peak (MB)", megabytes("measured_bytes")),
            ("> fitted estimate / measured", ratio_of("fitted_bytes", "measured_bytes")),
        ],
    ),
]

#: The targets read from them (:func:`benchmarks.reporting.verdicts.verdict_rows`).
VERDICTS = [
    dict(
        target="memory plan: estimate within ±30 % of the measured peak, every application",
        rows="memory-plan",
        items=memory_plan_items,
        bound=("<=", 0.30),
        table="memory-plan",
    ),
]
