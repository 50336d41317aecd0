"""Tables of the checks beside the speed runs: GPUs under JAX (presets, mixed precision, correctness), oneDNN's
worth to the main job, and fine-tuning against training from scratch on a folder of images."""

from benchmarks.reporting.cells import col, num, percent, r2


def by_policy(rows):
    """One row per model: the step (and its share of float32's) and the accuracy under each policy."""
    out = {}
    for row in rows:
        out.setdefault(row["model"], {"model": row["model"]})[row["policy"]] = row
    return list(out.values())


def policy_step(policy):
    def cell(row):
        if policy not in row:
            return "—"
        step = row[policy]["step_ms"]
        return num(step) + ("" if policy == "float32" else f" ({r2(step / row['float32']['step_ms'])}×)")

    return cell


def accuracies(row):
    return " / ".join(num(row[p]["accuracy_pct"]) if p in row else "—" for p in POLICIES)


POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")


#: The tables of docs/benchmarks/checks.md, in page order.
TABLES = [
    dict(
        key="gpu-presets",
        heading="GPU checks (JAX backend)",
        rows=("gpu-presets",),
        intro="The presets on the full test sets, correct images of 10,000 (the registry's count: a CPU with TensorFlow).",
        columns=[
            col("preset"),
            col("registry", "> registry (CPU)"),
            col("tf32", "> JAX default (TF32)"),
            col("highest", '> `"highest"` precision'),
            col("seconds", "> seconds, compilation included"),
        ],
    ),
    dict(
        key="gpu-mixed-precision",
        heading=None,
        rows=("gpu-mixed-precision",),
        transform=by_policy,
        intro="Mixed precision: two epochs from scratch on the embedded 8,000-image sample; step: median after the "
        "first epoch (in brackets: its share of float32's); accuracy on the other 2,000 images.",
        columns=[col("model")]
        + [(f"> {p} step (ms)", policy_step(p)) for p in POLICIES]
        + [("> accuracy (%), float32 / float16 / bfloat16", accuracies)],
    ),
    dict(
        key="gpu-checks",
        heading=None,
        rows=("gpu-checks",),
        intro="Correctness:",
        prose=lambda cells: ": ".join(cells),
        columns=[col("check"), col("result")],
    ),
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
