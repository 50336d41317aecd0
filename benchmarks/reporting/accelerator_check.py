"""``accelerator_check``'s tables: the presets, mixed precision, ConsensusCapsNet's step and correctness on a GPU
under JAX or PyTorch (the backend: the run's software line and host name)."""

from benchmarks.reporting.cells import col, num, r2


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
        if policy == "float32" or "float32" not in row:
            return num(step)
        return f"{num(step)} ({r2(step / row['float32']['step_ms'])}×)"

    return cell


def accuracies(row):
    return " / ".join(num(row[p]["accuracy_pct"]) if p in row else "—" for p in POLICIES)


POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")


#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="gpu-presets",
        heading="GPU checks (JAX and PyTorch backends)",
        rows=("gpu-presets",),
        intro="The presets on the full test sets, correct images of 10,000 (registry: the count the registry recorded "
        "then, on a CPU with TensorFlow; a row dated before a preset's retraining measured its earlier file).",
        columns=[
            col("preset"),
            col("registry", "> registry (CPU)"),
            col("tf32", "> backend's default precision (JAX: TF32)"),
            col("highest", "> highest precision (no TF32)"),
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
        key="gpu-consensus-step",
        heading=None,
        rows=("gpu-consensus-step",),
        intro="ConsensusCapsNet's training step per paper router on 28×28×1 inputs (Adam, the library's loss per "
        "router, random data; the median step after the warm-up) and the hours an MNIST epoch of 60,000 images "
        "would take at that step.",
        columns=[
            col("router"),
            col("batch_size", "> batch"),
            col("step_s", "> step (s)"),
            col("hours_per_mnist_epoch", "> hours per MNIST epoch"),
        ],
    ),
    dict(
        key="gpu-checks",
        heading=None,
        rows=("gpu-checks",),
        intro="Correctness:",
        prose=lambda cells: ": ".join(cells),
        columns=[col("check"), col("result")],
    ),
]
