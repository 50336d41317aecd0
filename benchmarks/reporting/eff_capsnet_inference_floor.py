"""``eff_capsnet_inference_floor``'s table: what Efficient-CapsNet's inference has left to gain."""

from benchmarks.reporting.cells import col, r2

#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="effcaps-floor",
        heading=None,
        rows=("effcaps-floor",),
        intro="What its inference has left to gain (b64, shares of our own `predict_on_batch` in one process): EscVM's "
        "network makes the same four convolutions, so their time bounds any float32 implementation of it.",
        columns=[col("variant"), col("ms", "> ms"), ("> share", lambda row, rows: r2(row["ms"] / rows[0]["ms"]))],
        prose=lambda cells: f"{cells[0]} {cells[1]} ms ({cells[2]})",
    ),
]
