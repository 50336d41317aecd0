"""benchmarks/cpu_allocator.py: each case's settings as the run file's rows (medians, the kernel's CPU seconds,
faults and the ratio worked out by hand), written by the one writer and rendered on the checks page."""

import pytest
from run_files import written_and_rendered

from benchmarks import cpu_allocator


def process(seconds, system, faults, rss):
    return {"median_step_seconds": seconds, "system_seconds": system, "minor_faults": faults, "peak_rss_mib": rss}


MALLOC, BFC = cpu_allocator.SETTINGS  # the labels, the baseline first
FIGURES = {
    "consensus-lstm": {
        MALLOC: [process(7.7427, 5.45, 2905376, 2506), process(7.9, 5.6, 2900000, 2510)],
        BFC: [process(4.8985, 0.22, 18187, 2541), process(4.7, 0.20, 18000, 2600), process(5.0, 0.3, 20000, 2400)],
    }
}


def test_rows_hold_each_settings_figures_and_malloc_over_bfc():
    malloc, bfc = cpu_allocator.rows_of(FIGURES)
    # malloc: median of 7.7427 and 7.9 s is 7.82135 s; kernel CPU median (5.45 + 5.6) / 2 = 5.525 -> 5.53 (5.52 in
    # binary floating point: 5.525 rounds either way, so checked to the cent); faults (2,905,376 + 2,900,000) / 2.
    assert (malloc["median_ms"], malloc["process_ms"]) == (7821.4, [7742.7, 7900.0])
    assert malloc["system_s"] == pytest.approx(5.525, abs=0.006) and malloc["faults_k"] == 2902.7
    assert malloc["peak_rss_mib"] == 2510 and "malloc_over_bfc" not in malloc
    # BFC: median of 4.8985, 4.7, 5.0 s is 4.8985 s; kernel 0.22 s; faults 18,187; largest peak 2,600 MiB;
    # 7.82135 / 4.8985 = 1.597 -> 1.6.
    assert (bfc["median_ms"], bfc["process_ms"], bfc["system_s"]) == (4898.5, [4898.5, 4700.0, 5000.0], 0.22)
    assert (bfc["faults_k"], bfc["peak_rss_mib"], bfc["malloc_over_bfc"]) == (18.2, 2600, 1.6)
    assert {malloc["case"], bfc["case"]} == {"consensus-lstm"} and {malloc["target"], bfc["target"]} == {
        "cpu-allocator"
    }


def test_the_run_file_validates_and_renders(tmp_path):
    _, page = written_and_rendered(
        tmp_path, "cpu_allocator", "cpu-allocator", cpu_allocator.rows_of(FIGURES), "docs/benchmarks/checks.md"
    )
    assert "| consensus-lstm | BFC (TF_CPU_ALLOCATOR_USE_BFC=true, the CLI's) | 4,898.5 |" in page and "| 1.6 |" in page


def test_unknown_cases_are_refused():
    with pytest.raises(SystemExit):
        cpu_allocator.main(["--cases", "main-job,nonsense"])
