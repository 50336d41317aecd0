"""``memory``'s tables and targets: a convolutional capsule network's live tensors against its largest vote
tensor, and each router's forward memory by iterations."""

from benchmarks.reporting.cells import col, num, r2, ratio_of


def memory_items(rows):
    sel = [r for r in rows if r["router"] in ("kernel", "lstm")]
    return [
        (
            f"from {a} to {b} iterations",
            [r[f"live_{b}_mib"] / r[f"live_{a}_mib"] for r in sel],
            ", ".join(f"{r['router']} {num(r[f'live_{a}_mib'])} → {num(r[f'live_{b}_mib'])} MiB" for r in sel),
        )
        for a, b in ((1, 3), (3, 5))
    ]


#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="conv-live",
        heading=None,
        rows=("conv-live",),
        intro="Its convolutional capsule layers' memory in one training step: live tensors (the most TensorFlow's "
        "tensors held at once) against the model's largest vote tensor.",
        columns=[
            col("configuration"),
            col("batch", "> batch"),
            col("iterations", "> iterations"),
            col("rss_mib", "> peak RSS (MiB)"),
            col("live_mib", "> live tensors (MiB)"),
            col("votes_mib", "> largest vote tensor (MiB)"),
            ("> live / votes", ratio_of("live_mib", "votes_mib")),
        ],
    ),
    dict(
        key="router-memory",
        heading=None,
        rows=("router-memory",),
        intro="Forward memory by iterations: live tensors' peak, fc shape.",
        columns=[
            col("router"),
            col("live_1_mib", "> 1 iteration (MiB)"),
            col("live_3_mib", "> 3 (MiB)"),
            col("live_5_mib", "> 5 (MiB)"),
        ],
    ),
]

#: The targets read from them (:func:`benchmarks.reporting.verdicts.verdict_rows`).
VERDICTS = [
    dict(
        target="convolutional capsule layers: live tensors within 2× one vote tensor",
        rows="conv-live",
        items=lambda rows: [
            (
                "",
                [r["live_mib"] / r["votes_mib"] for r in rows],
                f"at most {r2(max(r['live_mib'] / r['votes_mib'] for r in rows))}×",
            )
        ],
        bound=("<=", 2.0),
        table="conv-live",
    ),
    dict(
        target="kernel and LSTM forward memory not growing with the iterations",
        rows="router-memory",
        items=memory_items,
        bound=("<=", 1.0),
        table="router-memory",
    ),
]
