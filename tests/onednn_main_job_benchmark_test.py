"""benchmarks/onednn_main_job.py: each setting's processes as the run file's rows (medians and their ratio
worked out by hand), written by the one writer and rendered on the checks page."""

from run_files import written_and_rendered

from benchmarks import onednn_main_job

MEDIANS = {"on": [0.0312, 0.0300, 0.0320], "off": [0.0450, 0.0440]}


def test_rows_hold_each_settings_median_and_off_over_on():
    on, off = onednn_main_job.rows_of(MEDIANS)
    # on: the median of 31.2, 30.0, 32.0 ms is 31.2; off: of 45.0 and 44.0, 44.5; 44.5 / 31.2 = 1.43.
    assert (on["median_ms"], on["process_ms"]) == (31.2, [31.2, 30.0, 32.0]) and "off_over_on" not in on
    assert (off["median_ms"], off["process_ms"], off["off_over_on"]) == (44.5, [45.0, 44.0], 1.43)
    assert {on["target"], off["target"]} == {"onednn-main-job"}


def test_the_run_file_validates_and_renders(tmp_path):
    _, page = written_and_rendered(
        tmp_path, "onednn_main_job", "onednn-main-job", onednn_main_job.rows_of(MEDIANS), "docs/benchmarks/checks.md"
    )
    assert (
        "| oneDNN off (TF_ENABLE_ONEDNN_OPTS=0, what the CLI sets on TF 2.21) | 44.5 |" in page and "| 1.43 |" in page
    )
