"""``export_latency``'s table and target: the exported models' latency, run without keras_capsules."""

from benchmarks.reporting.cells import col, num


def effcaps_b1(rows):
    """EffCapsNet/mnist's batch-1 latency in its fastest format; no figure where the run has no such row or no
    format of it ran."""
    row = next((r for r in rows if r["configuration"] == "EffCapsNet/mnist"), {})
    timed = [
        (label, row[key])
        for label, key in (("ONNX Runtime", "onnx_b1"), ("LiteRT", "litert_b1"), ("SavedModel", "savedmodel_b1"))
        if row.get(key) is not None
    ]
    if not timed:
        return []
    label, best = min(timed, key=lambda pair: pair[1])
    return [("", [best], f"{num(best)} ms ({label}); SavedModel {num(row.get('savedmodel_b1'))} ms")]


#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="export",
        heading=None,
        rows=("export",),
        filter=lambda r: r["configuration"].startswith("EffCapsNet"),
        intro="Exported, then run without keras_capsules, ms (the run file has all 11 exported models):",
        columns=[col("configuration")]
        + [
            col(f"{fmt}_b{b}", f"> {label} b{b}")
            for fmt, label in (("savedmodel", "SavedModel"), ("onnx", "ONNX Runtime"), ("litert", "LiteRT"))
            for b in (1, 64)
        ],
    ),
]

#: The targets read from them (:func:`benchmarks.reporting.verdicts.verdict_rows`).
VERDICTS = [
    dict(
        target="Efficient-CapsNet batch-1 latency under 2 ms, fastest format",
        rows="export",
        items=effcaps_b1,
        bound=("<", 2.0),
        table="export",
    ),
]
