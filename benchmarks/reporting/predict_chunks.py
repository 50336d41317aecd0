"""``predict_chunks``'s table: prediction by chunks of rows against the whole vote tensor."""

from benchmarks.reporting.cells import col, num, ratio_of

#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="predict-chunks",
        heading="Prediction by chunks of rows",
        rows=("predict-chunks",),
        intro="`benchmarks/predict_chunks.py`: `predict_on_batch` of the convolutional capsule networks with `ConvCaps` routing "
        "chunks of output rows within its vote budget (`remat=True`, the default) against the whole vote tensor at once "
        "(`remat=False`), same model and weights, one fresh process per mode: the process's peak RSS after predicting (MB), "
        "the median call per image (ms) and the first call, tracing included (s); the chunks each `ConvCaps` layer routes.",
        columns=[
            col("application"),
            col("input"),
            col("batch", "> batch"),
            ("> chunks per layer", lambda row: " · ".join(str(c) for c in row.get("chunks_chunks", [])) or "—"),
            (
                "> peak MB: whole · chunks",
                lambda row: f"{num(row.get('whole_peak_mb'))} · {num(row.get('chunks_peak_mb'))}",
            ),
            ("> chunks / whole", ratio_of("chunks_peak_mb", "whole_peak_mb")),
            (
                "> ms per image: whole · chunks",
                lambda row: f"{num(row.get('whole_infer_ms_per_image'))} · {num(row.get('chunks_infer_ms_per_image'))}",
            ),
            (
                "> first call s: whole · chunks",
                lambda row: f"{num(row.get('whole_first_s'))} · {num(row.get('chunks_first_s'))}",
            ),
            (
                "note",
                lambda row: " · ".join(
                    f"{mode}: {row[f'{mode}_error']}" for mode in ("whole", "chunks") if row.get(f"{mode}_error")
                ),
            ),
        ],
    ),
]
