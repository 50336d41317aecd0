"""benchmarks/recompute.py: each case's settings as the run file's rows (medians, whether the step rematerialised and
the ratio worked out by hand), written by the one writer and rendered on the memory page."""

from run_files import written_and_rendered

from benchmarks import recompute


def process(seconds, rematerialised, rss):
    return {
        "median_step_seconds": seconds,
        "system_seconds": 0.2,
        "minor_faults": 25000,
        "peak_rss_mib": rss,
        "recompute": rematerialised,
    }


ON, AUTO = recompute.SETTINGS  # the labels, the baseline first
FIGURES = {"consensus-lstm": {ON: [process(5.2114, True, 2528), process(5.0, True, 2530)], AUTO: [process(3.0366, False, 9583), process(2.98, False, 9360)]}}  # fmt: skip


def test_rows_say_whether_the_step_rematerialised_and_on_over_auto():
    on, auto = recompute.rows_of(FIGURES)
    # on: median of 5.2114 and 5.0 s = 5.1057 s; auto: of 3.0366 and 2.98 s = 3.0083 s; 5.1057 / 3.0083 = 1.697.
    assert (on["median_ms"], on["recompute"], on["peak_rss_mib"]) == (5105.7, "on", 2530) and "on_over_auto" not in on
    assert (auto["median_ms"], auto["recompute"], auto["peak_rss_mib"], auto["on_over_auto"]) == (
        3008.3,
        "off",
        9583,
        1.7,
    )
    assert auto["process_ms"] == [3036.6, 2980.0] and {on["target"], auto["target"]} == {"recompute"}


def test_the_run_file_validates_and_renders(tmp_path):
    _, page = written_and_rendered(
        tmp_path, "recompute", "recompute", recompute.rows_of(FIGURES), "docs/benchmarks/memory.md"
    )
    assert f"| consensus-lstm | {AUTO} | off | 3,008.3 |" in page and "| 1.7 |" in page
