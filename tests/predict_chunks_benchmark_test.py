"""benchmarks/predict_chunks.py: one process's figures in both modes, and the report's table on a hand-made row."""

from benchmarks import predict_chunks, report


def test_the_modes_route_by_chunks_and_whole(monkeypatch):
    from keras_capsules.layers import conv_caps

    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 1)  # one output row a chunk
    chunks = predict_chunks.measure("ConsensusCapsNet-dynamic", 40, 2, 1, "chunks")
    whole = predict_chunks.measure("ConsensusCapsNet-dynamic", 40, 2, 1, "whole")
    # 40 px: 18x18 primary capsules; ConvCaps 3x3 stride 2 -> 8 output rows, then 3x3 stride 1 -> 6: a chunk per row, or one.
    assert chunks["chunks"] == [8, 6] and whole["chunks"] == [1, 1]
    for row in (chunks, whole):
        assert row["first_s"] > 0 and row["infer_ms_per_image"] > 0 and 200 < row["build_peak_mb"] <= row["peak_mb"]


def test_the_report_table_reads_both_modes():
    row = {
        "target": "predict-chunks",
        "application": "A",
        "input": "128x128x3",
        "batch": 16,
        "chunks_chunks": [5, 7],
        "whole_peak_mb": 14800,
        "chunks_peak_mb": 7400,
        "whole_infer_ms_per_image": 2000.0,
        "chunks_infer_ms_per_image": 2100.0,
        "whole_first_s": 40.0,
        "chunks_first_s": 60.0,
    }
    run = {
        "host": {"id": "h", "cpu": "c", "cores": 2, "name": "H"},
        "date": "2026-11-29",
        "time_utc": "08:00-09:00",
        "command": "python benchmarks/predict_chunks.py",
        "measured": "m",
        "source": "s",
        "rows": [row],
        "file": "f.json",
    }
    page = report.pages([run])["docs/benchmarks/scaling.md"]
    assert (
        "| A | 128x128x3 | 16 | 5 · 7 | 14,800 · 7,400 | 0.50 | 2,000.0 · 2,100.0 | 40.0 · 60.0 | |" in page
    )  # 7,400 / 14,800
    row.pop("chunks_peak_mb")
    row["chunks_error"] = "exit status -9"
    assert (
        "| A | 128x128x3 | 16 | 5 · 7 | 14,800 · — | — | 2,000.0 · 2,100.0 | 40.0 · 60.0 | chunks: exit status -9 |"
        in report.pages([run])["docs/benchmarks/scaling.md"]
    )
