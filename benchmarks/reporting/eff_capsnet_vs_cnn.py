"""``eff_capsnet_vs_cnn``'s table and target: Efficient-CapsNet against a CNN of its parameter count."""

from benchmarks.reporting.cells import col, r2, ratio_of


def cnn_items(rows):
    sel = [r for r in rows if r["configuration"].startswith("training")]
    values = [r["effcaps_ms"] / r["cnn_ms"] for r in sel]
    return [("", values, ", ".join(f"{r['configuration'].split(', ')[1]} {r2(v)}" for r, v in zip(sel, values)))]


#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="effcaps-vs-cnn",
        heading=None,
        rows=("effcaps-vs-cnn",),
        intro="Against a plain CNN with the same parameter count (1,573,744 against 1,573,955, 28×28×1):",
        columns=[
            col("configuration"),
            col("effcaps_ms", "> EffCapsNet (ms)"),
            col("cnn_ms", "> CNN (ms)"),
            ("> ratio", ratio_of("effcaps_ms", "cnn_ms")),
        ],
    ),
]

#: The targets read from them (:func:`benchmarks.reporting.verdicts.verdict_rows`).
VERDICTS = [
    dict(
        target="Efficient-CapsNet training step ≤ 2.5× a plain CNN's",
        summary="Efficient-CapsNet training step against a CNN of its parameter count, 28×28×1",
        rows="effcaps-vs-cnn",
        items=cnn_items,
        bound=("<=", 2.5),
        table="effcaps-vs-cnn",
    ),
]
