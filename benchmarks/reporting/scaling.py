"""Tables of the applications at larger inputs: training step, memory and arithmetic against the matched CNN,
prediction by chunks, first steps, profiles and counts of the slowest steps, and the step per Keras backend."""

import statistics

from benchmarks.reporting.cells import before_after, col, measured_only, num, r2, ratio, ratio_of

#: The input sides of benchmarks/scale.py's sweep (RGB), one column each.
SCALE_SIZES = (32, 64, 128, 224)


def scale_by_application(rows):
    """benchmarks/scale.py's rows, one per (application, size) -> one per application: ``{size: row}`` under
    ``"sizes"`` and the same input's ``BaselineCNN`` row under ``"cnn"``."""
    cnn = {row["size"]: row for row in rows if row["application"] == "BaselineCNN"}
    out = {}
    for row in rows:
        entry = out.setdefault(row["application"], {"application": row["application"], "sizes": {}, "cnn": cnn})
        entry["sizes"][row["size"]] = row
    return list(out.values())


def scale_size_cell(size, figures, against_cnn):
    """An application's cell at input ``size``: ``figures(row)``, then ``(against_cnn(row, cnn_row))`` where the
    CNN was measured at that input; why not, for a configuration not measured (refused, skipped)."""

    def cell(entry):
        row, cnn = entry["sizes"].get(size), entry["cnn"].get(size)
        if row is None:
            return "—"
        if row["status"] != "measured":
            return f"{row['status']}: {row.get('why') or '?'}"
        text = figures(row)
        if cnn is not None and cnn["status"] == "measured" and entry["application"] != "BaselineCNN":
            text += f" ({against_cnn(row, cnn)})"
        return text

    return cell


def scale_cell(size):
    """``step ms · training peak MB (× the CNN's step · × its memory)`` at ``size``."""
    return scale_size_cell(
        size,
        lambda row: f"{num(round(row['step_ms']))} · {num(row['train_peak_mb'])}",
        lambda row, cnn: f"{r2(row['step_ms'] / cnn['step_ms'])}× · {r2(row['train_peak_mb'] / cnn['train_peak_mb'])}×",
    )


def scale_arithmetic_cell(size):
    """``GFLOP per image · first step s · inference ms per image · achieved GFLOP/s (× the CNN's)`` at ``size``."""
    return scale_size_cell(
        size,
        lambda row: (
            f"{row['gflop_per_image']:.3g} · {row['first_step_s']:g} s · {row['infer_ms_per_image']:g} · {row['gflops']:.3g}"
        ),
        lambda row, cnn: f"{r2(row['gflops'] / cnn['gflops'])}×",
    )


def scale_matmul(entry):
    rates = {row.get("matmul_gflops") for row in entry["sizes"].values()} - {None}
    return (
        f"{entry['application']} (host matrix product {', '.join(f'{r:g}' for r in sorted(rates))} GFLOP/s)"
        if entry["application"] == "BaselineCNN" and rates
        else entry["application"]
    )


def backend_cell(backend):
    """One backend's step (ms) and first step (s) in a backends row, " (XLA)" when compiled with XLA, or its error."""

    def cell(row):
        if row.get(f"{backend}_error"):
            return row[f"{backend}_error"]
        xla = " (XLA)" if row.get(f"{backend}_xla") else ""
        return f"{num(row.get(f'{backend}_step_ms'))} · {num(row.get(f'{backend}_first_s'))}{xla}"

    return cell


#: The tables of docs/benchmarks/scaling.md, in page order.
TABLES = [
    dict(
        key="scale",
        heading="Capsules at larger inputs",
        rows=("scale",),
        transform=scale_by_application,
        intro="`benchmarks/scale.py`: every application at RGB inputs, batch 16, 10 classes: the median `train_on_batch` "
        "step after warm-up (ms) and the process's peak RSS after the training steps (MB), in brackets as multiples of the matched "
        "`BaselineCNN`'s at the same input; one process per configuration, alternating, medians. A constructor that "
        "refuses the input, and a configuration the memory guard stopped, say so.",
        columns=[("application", scale_matmul)]
        + [(f"> {s}×{s}×3: step ms · peak MB (× CNN)", scale_cell(s)) for s in SCALE_SIZES],
    ),
    dict(
        key="scale-arithmetic",
        heading=None,
        rows=("scale",),
        transform=scale_by_application,
        intro="From the run of each row above: counted GFLOP per image of a training step (`benchmarks/training_step_cost.py`'s counter), the "
        "first step, tracing included (s), `predict_on_batch` per image (ms) and the GFLOP/s the step achieves (in "
        "brackets: as a multiple of the CNN's).",
        columns=[("application", lambda entry: entry["application"])]
        + [
            (f"> {s}×{s}×3: GFLOP · first step · inference ms · GFLOP/s (× CNN)", scale_arithmetic_cell(s))
            for s in SCALE_SIZES
        ],
    ),
    dict(
        key="predict-chunks",
        heading="Prediction by chunks of rows",
        rows=("predict-chunks",),
        intro="`benchmarks/predict_chunks.py`: `predict_on_batch` of the convolutional capsule networks with `ConvCaps` routing "
        "chunks of output rows within its vote budget (`remat=True`, the default) against the whole vote tensor at once "
        "(`remat=False`), same model and weights, one fresh process per mode: the process's peak RSS after predicting (MB), "
        "the median call per image (ms) and the first call, tracing included (s); the chunks each `ConvCaps` layer routes.",
        columns=[
            col("application"),
            col("input"),
            col("batch", "> batch"),
            ("> chunks per layer", lambda row: " · ".join(str(c) for c in row.get("chunks_chunks", [])) or "—"),
            (
                "> peak MB: whole · chunks",
                lambda row: f"{num(row.get('whole_peak_mb'))} · {num(row.get('chunks_peak_mb'))}",
            ),
            ("> chunks / whole", ratio_of("chunks_peak_mb", "whole_peak_mb")),
            (
                "> ms per image: whole · chunks",
                lambda row: f"{num(row.get('whole_infer_ms_per_image'))} · {num(row.get('chunks_infer_ms_per_image'))}",
            ),
            (
                "> first call s: whole · chunks",
                lambda row: f"{num(row.get('whole_first_s'))} · {num(row.get('chunks_first_s'))}",
            ),
            (
                "note",
                lambda row: " · ".join(
                    f"{mode}: {row[f'{mode}_error']}" for mode in ("whole", "chunks") if row.get(f"{mode}_error")
                ),
            ),
        ],
    ),
    dict(
        key="first-step-backbone",
        heading="First step: the application against its backbone alone",
        rows=("first-step-backbone",),
        intro="`benchmarks/first_step_backbone.py`: the first `train_on_batch` (tracing included) of the application and of its "
        "layers up to its backbone's last layer with a pooled dense head (the same convolutions without the capsules), "
        "fresh processes alternating; each process's first step, in the order run, and the median of the next step.",
        columns=[
            col("application"),
            col("model"),
            col("cut", "backbone up to"),
            col("input"),
            col("batch", "> batch"),
            col("layers", "> layers"),
            ("> first step (s), each process", lambda row: " · ".join(num(v) for v in row["first_step_s"])),
            col("step_s", "> step (s)"),
        ],
    ),
    dict(
        key="first-step",
        heading="First step: traced once",
        rows=("first-step",),
        intro="`benchmarks/first_step.py`: the first `train_on_batch` (tracing included) of every application, an earlier "
        "package (the run file's `before`, first on `PYTHONPATH`: for the 2026-12-02 run the package before "
        "`CapsuleClassifier` created the optimizer's and metrics' variables ahead of the first step, for the 2026-12-03 "
        "run the package before routers compiled with XLA) and this one, fresh processes alternating; how many times each "
        "traced its training step, each process's first step, and the median step after it (the run's `measured` says "
        "of how many).",
        columns=[
            col("application"),
            col("input"),
            col("batch", "> batch"),
            ("> traces, before · after", measured_only(before_after("traces", lambda v: "/".join(map(str, v))))),
            (
                "> first step (s), before · after",
                measured_only(before_after("first_step_s", lambda v: " / ".join(map(num, v)))),
            ),
            (
                "> after / before",
                measured_only(
                    lambda row: r2(
                        statistics.median(row["after_first_step_s"]) / statistics.median(row["before_first_step_s"])
                    )
                ),
            ),
            ("> step (s), before · after", measured_only(before_after("step_s", num))),
            ("note", lambda row: row.get("why") or ""),
        ],
    ),
    dict(
        key="scale-before",
        heading="Capsules at larger inputs, before the scaling work",
        rows=("scale-before",),
        transform=scale_by_application,
        intro="The same measurements (`benchmarks/scale.py --before`) of the package as it was before the convolutional capsule "
        "layers were made to scale (the run file's `package`: the scaling work's starting point, the FLOP counter already "
        "fixed), on the host and in the session of the run above; no verdict reads them.",
        columns=[("application", scale_matmul)]
        + [(f"> {s}×{s}×3: step ms · peak MB (× CNN)", scale_cell(s)) for s in SCALE_SIZES[:2]]
        + [
            (
                f"> {s}×{s}×3: GFLOP/s (× CNN) · first step",
                scale_size_cell(
                    s,
                    lambda row: f"{row['gflops']:.3g} · {row['first_step_s']:g} s",
                    lambda row, cnn: f"{r2(row['gflops'] / cnn['gflops'])}×",
                ),
            )
            for s in SCALE_SIZES[:2]
        ],
    ),
    dict(
        key="profile-step",
        heading="Profile of the slowest applications",
        rows=("profile-step",),
        intro="`benchmarks/profile_step.py` (TensorFlow's profiler, which slows the step; op time is the host's self time "
        "of the ops it traces, the shares are what counts) and `benchmarks/training_step_cost.py` (counted GFLOP per "
        "image and flops per float32 byte written, from the traced graph) on the same package: one training step at "
        "batch 16, RGB; the package of each row named (before the chunking work, at the HEAD of its day, with a change). Step "
        'and first step (tracing included) from the profiling process; each run\'s `measured` (in "The runs") says '
        "what else the machine ran: compare the rows of one run with each other, not across runs.",
        columns=[
            col("configuration"),
            col("input"),
            col("package"),
            col("step_ms", "> step (ms)"),
            col("first_step_s", "> first step (s)"),
            col("gflop_per_image", "> GFLOP / image"),
            (
                "> GFLOP/s",
                lambda row: r2(
                    ratio(row["gflop_per_image"] and row["gflop_per_image"] * row["batch"] * 1e3, row["step_ms"])
                ),
            ),
            col("graph_ops", "> ops in the step's graph"),
            col("flops_per_byte", "> flops / byte written"),
            (
                "largest op types (share of the profiled op time)",
                lambda row: " · ".join(f"{name} {100 * share:.0f} %" for name, share in row["op_types"][:8]),
            ),
        ],
    ),
    dict(
        key="step-cost",
        heading="What a training step counts at larger inputs",
        rows=("step-cost",),
        intro="`benchmarks/scale_counts.py`: one training step of each application (the configuration of the scale runs, 10 "
        "classes, RGB), traced and counted from its graph by `benchmarks/training_step_cost.py`'s counter: arithmetic, "
        "transcendental elements (`exp`, `cos`, ...: one flop each in the GFLOP, many multiply-adds each in time), "
        "float32 elements written, and flops per byte written (the lower, the more the step is bound by memory "
        "traffic); counts of the graph, the same on any machine.",
        columns=[
            col("application"),
            col("input"),
            col("batch", "> batch"),
            col("gflop_per_image", "> GFLOP / image"),
            col("m_transcendental_per_image", "> M transcendental / image"),
            col("m_written_per_image", "> M written / image"),
            ("> GB written per step", lambda row: f"{4 * row['m_written_per_image'] * row['batch'] / 1e3:,.1f}"),
            col("flops_per_byte", "> flops / byte written"),
            col("graph_ops", "> ops in the graph"),
            (
                "largest op types (MFLOP / image)",
                lambda row: " · ".join(f"{t['op_type']} {t['mflop_per_image']:,.0f}" for t in row["op_types"][:6]),
            ),
        ],
    ),
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
