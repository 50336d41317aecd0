"""benchmarks/scale_counts.py: a counted row against a hand count of the CNN's convolutions, and the report's table on a hand-made row."""

import math

import pytest

from benchmarks import report, scale_counts


def test_the_cnns_convolutions_are_counted_as_their_multiply_adds():
    from keras_capsules import applications

    row = scale_counts.count_row("BaselineCNN", 32, 2, top=20)
    model = applications.get_configuration("BaselineCNN/matched").build(input_shape=(32, 32, 3), classes=10)
    # forward convolution: 2 flops per multiply-add, K*K*C_in of them per output value
    forward = sum(
        2 * math.prod(layer.output.shape[1:]) * math.prod(layer.kernel.shape[:3])
        for layer in model.layers
        if type(layer).__name__ == "Conv2D"
    )
    by_type = {t["op_type"]: t for t in row["op_types"]}
    assert by_type["Conv2D"]["mflop_per_image"] == pytest.approx(forward / 1e6, abs=0.01)
    assert (row["application"], row["input"], row["batch"], row["parameters"]) == (
        "BaselineCNN",
        "32x32x3",
        2,
        model.count_params(),
    )
    assert row["m_transcendental_per_image"] == 0  # ReLU, no exp: the softmax's exps are 10 per image
    # flops per byte written: the step's flops over 4 bytes per float32 element written
    assert row["flops_per_byte"] == pytest.approx(
        row["gflop_per_image"] * 1e3 / (4 * row["m_written_per_image"]), rel=1e-2
    )


def test_an_em_network_counts_its_exponentials():
    row = scale_counts.count_row("MatrixCapsNet-small", 32, 2, top=40)
    exps = {t["op_type"]: t["m_transcendental_per_image"] for t in row["op_types"]}.get("Exp", 0)
    assert exps > 0 and row["m_transcendental_per_image"] >= exps


def test_the_report_table_reads_a_hand_made_row():
    row = {
        "target": "step-cost",
        "application": "A",
        "input": "64x64x3",
        "batch": 16,
        "gflop_per_image": 5.0,
        "m_transcendental_per_image": 800.0,
        "m_written_per_image": 1000.0,
        "flops_per_byte": 1.25,
        "graph_ops": 4000,
        "op_types": [{"op_type": "Mul", "mflop_per_image": 2300.4}, {"op_type": "Exp", "mflop_per_image": 343.0}],
    }
    run = {
        "host": {"id": "h", "cpu": "c", "cores": 2, "name": "H"},
        "date": "2026-12-01",
        "time_utc": "18:00-18:10",
        "command": "python benchmarks/scale_counts.py",
        "measured": "m",
        "source": "s",
        "rows": [row],
        "file": "f.json",
    }
    page = report.pages([run])["docs/benchmarks/scaling.md"]
    assert "## What a training step counts at larger inputs" in page
    # 1,000 M float32 values per image x 16 images x 4 bytes = 64.0 GB
    assert "| A | 64x64x3 | 16 | 5.0 | 800.0 | 1,000.0 | 64.0 | 1.25 | 4,000 | Mul 2,300 · Exp 343 |" in page


def test_an_unknown_application_is_refused():
    with pytest.raises(SystemExit, match=r"scale_counts: argument --only: unknown application\(s\) \['Nope'\]"):
        scale_counts.main(["--only", "Nope"])
