"""``backends``'s table: the training step per Keras backend."""

from benchmarks.reporting.cells import col, num, ratio_of


def backend_cell(backend):
    """One backend's step (ms) and first step (s) in a backends row, " (XLA)" when compiled with XLA, or its error."""

    def cell(row):
        if row.get(f"{backend}_error"):
            return row[f"{backend}_error"]
        xla = " (XLA)" if row.get(f"{backend}_xla") else ""
        return f"{num(row.get(f'{backend}_step_ms'))} · {num(row.get(f'{backend}_first_s'))}{xla}"

    return cell


#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="backends",
        heading="Training step per Keras backend",
        rows=("backends",),
        intro="`benchmarks/backends.py`: `train_on_batch` of each application (default configuration and input, Adam, margin "
        "loss) on TensorFlow, JAX and PyTorch, one fresh process per backend, alternating; `compile`'s defaults (XLA on "
        "JAX and TensorFlow where marked, eager PyTorch); the median step after the first (ms), and the first step, "
        'tracing included (s). The run\'s `measured` (in "The runs") says what else the machine ran.',
        columns=[
            col("application"),
            col("input"),
            col("batch", "> batch"),
        ]
        + [
            (f"> {label}: step ms · first s", backend_cell(backend))
            for backend, label in (("tensorflow", "TensorFlow"), ("jax", "JAX"), ("torch", "PyTorch"))
        ]
        + [("> PyTorch / TensorFlow step", ratio_of("torch_step_ms", "tensorflow_step_ms"))],
    ),
]
