"""benchmarks/roofline.py: a case's counts and times on small shapes, and the roofline arithmetic of its row."""

import pytest

from benchmarks import roofline


def test_the_attainable_rate_is_the_lower_roof_and_the_shares_divide_by_it():
    tf_row = {"plain_ms": 500.0, "xla_ms": 250.0, "matmul_gflops": 100.0, "bandwidth_gbs": 10.0, "graph_gflop": 1.9}
    jax_row = {"xla_gflop": 2.0, "xla_transcendental_g": 0.1, "xla_gbytes": 4.0}
    row = roofline.roofline_row("em-matrix-row", tf_row, jax_row)
    # 2 GFLOP over 4 GB: 0.5 flop per byte; 10 GB/s gives 5 GFLOP/s, under the 100 GFLOP/s peak
    assert row["intensity_flop_per_byte"] == pytest.approx(0.5)
    assert row["attainable_gflops"] == pytest.approx(5.0)
    assert row["plain_gflops"] == pytest.approx(4.0) and row["xla_gflops"] == pytest.approx(8.0)
    assert row["plain_share"] == pytest.approx(0.8) and row["xla_share"] == pytest.approx(1.6)
    compute_bound = roofline.roofline_row("em-matrix-row", tf_row, dict(jax_row, xla_gbytes=0.01))
    assert compute_bound["attainable_gflops"] == pytest.approx(100.0)
    line = roofline.markdown([row]).splitlines()[-1]
    assert line.startswith("| em-matrix-row | 2.00 / 1.90 |") and "| 80 % | 160 % |" in line


def test_every_case_names_a_registered_router_and_rank_4_votes():
    from keras_capsules import routing

    for what, spec, shape in roofline.CASES.values():
        assert spec["name"] in routing.available() and len(shape) == 4 and what


def test_a_small_case_counts_and_times_on_both_backends(monkeypatch):
    monkeypatch.setitem(roofline.CASES, "tiny", ("tiny", {"name": "dynamic"}, (2, 6, 3, 4)))
    tf_row = roofline.run_child("tiny", "tensorflow", 1)
    jax_row = roofline.run_child("tiny", "jax", 1)
    assert tf_row["plain_ms"] > 0 and tf_row["xla_ms"] > 0 and tf_row["matmul_gflops"] > 0
    # 3 iterations over (2, 6, 3, 4) votes: at least the 2*6*3*4 multiply-adds of one weighted sum, forward
    assert jax_row["xla_gflop"] * 1e9 > 2 * 2 * 6 * 3 * 4 and jax_row["xla_gbytes"] > 0
    assert tf_row["graph_gflop"] * 1e9 > 2 * 2 * 6 * 3 * 4
