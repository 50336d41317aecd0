"""``onednn_main_job``'s table: the main job with TensorFlow's oneDNN kernels on and off."""

from benchmarks.reporting.cells import col

#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="onednn-main-job",
        heading="The main job with TensorFlow's oneDNN kernels on and off",
        rows=("onednn-main-job",),
        intro="`benchmarks/onednn_main_job.py`: the command line turns oneDNN off on TensorFlow 2.21, whose oneDNN kernels "
        "corrupt the heap now and then (`tools/soak/README.md`); this is what that costs the README's main job per step.",
        columns=[
            col("setting"),
            col("median_ms", "> median step (ms)"),
            col("process_ms", "per process (ms)"),
            col("off_over_on", "> off / on"),
        ],
    ),
]
