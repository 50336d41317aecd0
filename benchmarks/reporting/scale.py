"""``scale``'s tables and targets: every application at larger RGB inputs against the matched CNN (step,
memory, arithmetic), now and before the scaling work."""

from benchmarks.reporting.cells import num, r2

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


def scale_memory_items(size, limit_mb):
    """Every application that builds at ``size``: its training peak RSS as a share of ``limit_mb`` (a skipped one:
    over it)."""

    def items(rows):
        sel = [r for r in rows if r["size"] == size and r["status"] in ("measured", "skipped")]
        values = [r["train_peak_mb"] / limit_mb if r["status"] == "measured" else float("inf") for r in sel]
        if not sel:
            return []
        worst = max(zip(values, sel), key=lambda pair: pair[0])[1]
        figure = (
            f"largest {worst['application']} {num(worst['train_peak_mb'])} MB"
            if worst["status"] == "measured"
            else f"{worst['application']} {worst['why']}"
        )
        return [("", values, f"{figure}; {len(sel)} built")]

    return items


def scale_time_items(rows):
    """At 64 px, per application: ``min(step / (10 x the CNN's), the CNN's GFLOP/s / (2 x its own) where its
    arithmetic is over 10x the CNN's)``: at most 1 when one of the two targets is met."""
    cnn = next(
        (r for r in rows if r["application"] == "BaselineCNN" and r["size"] == 64 and r["status"] == "measured"), None
    )
    sel = [r for r in rows if r["size"] == 64 and r["status"] == "measured" and r["application"] != "BaselineCNN"]
    if cnn is None or not sel:
        return []
    values = []
    for row in sel:
        rate = (
            cnn["gflops"] / (2 * row["gflops"])
            if row["gflop_per_image"] > 10 * cnn["gflop_per_image"]
            else float("inf")
        )
        values.append(min(row["step_ms"] / (10 * cnn["step_ms"]), rate))
    worst = sel[values.index(max(values))]
    figure = (
        f"worst {worst['application']}: step {r2(worst['step_ms'] / cnn['step_ms'])}× the CNN's, "
        f"{worst['gflops']:.3g} GFLOP/s against its {cnn['gflops']:.3g}"
    )
    others = [
        f"{row['application']} ({r2(row['step_ms'] / cnn['step_ms'])}×)"
        for row, value in zip(sel, values)
        if value > 1 and row is not worst
    ]
    return [("", values, figure + (f"; also missing both: {', '.join(others)}" if others else ""))]


#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
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
]

#: The targets read from them (:func:`benchmarks.reporting.verdicts.verdict_rows`).
VERDICTS = [
    dict(
        target="every application trains at 64×64×3, batch 16, within 8 GB",
        rows="scale",
        items=scale_memory_items(64, 8000),
        bound=("<=", 1.0),
        table="scale",
    ),
    dict(
        target="… and at 128×128×3 within 16 GB where it builds",
        rows="scale",
        items=scale_memory_items(128, 16000),
        bound=("<=", 1.0),
        table="scale",
    ),
    dict(
        target="64×64×3 step within 10× the CNN's, or half its GFLOP/s where the arithmetic is over 10× the CNN's",
        rows="scale",
        items=scale_time_items,
        bound=("<=", 1.0),
        table="scale",
    ),
]
