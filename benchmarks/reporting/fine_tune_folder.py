"""``fine_tune_folder``'s table: fine-tuning against training from scratch on a folder of images."""

from benchmarks.reporting.cells import col, num, percent

#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="fine-tune-folder",
        heading="Fine-tuning against training from scratch on a folder of images",
        rows=("fine-tune-folder",),
        intro="`benchmarks/fine_tune_folder.py`: EffCapsNet on one folder of Fashion-MNIST PNG files it writes (the run file's "
        "`folder`), each run one `training.train` call with the generic recipe, the same epochs, seed and stratified "
        "validation hold-out; the test split (`test/`) evaluated once, at the end of each run. It measures accuracy: the "
        "seconds are those of a machine shared with other work.",
        columns=[
            col("run"),
            col("weights"),
            col("freeze_backbone_epochs", "> frozen epochs"),
            col("epochs", "> epochs"),
            (
                "> training / held-out images",
                lambda row: f"{num(row.get('training_examples'))} / {num(row.get('validation_examples'))}",
            ),
            ("validation accuracy after each epoch (%)", percent("validation_accuracy")),
            ("> test accuracy (%)", percent("test_accuracy")),
            col("train_seconds", "> training (s)"),
        ],
    ),
]
