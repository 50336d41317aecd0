"""Capsules at larger inputs: the training step and memory of every application against the matched CNN's."""

from figures import records
from figures.numbers import check
from keras_capsules import markdown


def _gigabytes(megabytes):
    return f"{megabytes / 1000:.1f} GB"


def _scale_cell(row, cnn):
    """One application at one input: the training peak and the step as a multiple of the CNN's, or why there is none."""
    if row is None:
        return "not measured"
    if row["status"] == "refused":
        return "does not build"
    if row["status"] != "measured":
        return f"not trained: {row['why']}"
    text = _gigabytes(row["train_peak_mb"])
    if cnn is not None and cnn["status"] == "measured" and row is not cnn:
        text += f" · {row['step_ms'] / cnn['step_ms']:.1f}× the CNN's step"
    elif row is cnn:
        text += f" · {row['step_ms'] / 1000:.2g} s a step"
    return text


def _scale_summary(record):
    """A scale run's table (training peak and step against the CNN's, one column per size) and one finding per size."""
    rows = {(row["application"], row["size"]): row for row in record["rows"]}
    sizes = sorted({row["size"] for row in record["rows"] if row["status"] == "measured"})
    applications = list(dict.fromkeys(row["application"] for row in record["rows"]))
    batch = record["rows"][0]["batch"]
    check(all(row["batch"] == batch for row in record["rows"]), "every configuration trains at one batch")
    cnn = {size: rows.get(("BaselineCNN", size)) for size in sizes}
    lines = markdown.table(
        ["application", *(f"{s}×{s}×3" for s in sizes)],
        [
            [application, *(_scale_cell(rows.get((application, size)), cnn[size]) for size in sizes)]
            for application in applications
        ],
    )
    findings = []
    for size in sizes:
        built = [row for (application, s), row in rows.items() if s == size and row["status"] != "refused"]
        trained = [row for row in built if row["status"] == "measured"]
        if not built:
            continue
        largest = max(trained, key=lambda row: row["train_peak_mb"]) if trained else None
        stopped = [row["application"] for row in built if row["status"] != "measured"]
        sentence = f"- At {size}×{size}×3, {len(trained)} of the {len(built)} that build trained a step"
        if largest is not None:
            sentence += f"; the most memory, {largest['application']}'s, was {_gigabytes(largest['train_peak_mb'])}"
        if stopped:
            sentence += f"; not trained: {', '.join(stopped)} (the table says why)"
        base = cnn.get(size)
        if base is not None and base["status"] == "measured":
            ratios = sorted(
                (row["step_ms"] / base["step_ms"], row["application"]) for row in trained if row is not base
            )
            near = [application for ratio, application in ratios if ratio <= 3]
            far = [application for ratio, application in ratios if ratio > 10]
            if near:
                sentence += f". Within 3× the CNN's step: {', '.join(near)}"
            if far:
                sentence += f"; more than 10×: {', '.join(far)}"
        findings.append(sentence + ".")
    return batch, lines, findings


def _measured_where(record, name):
    package = record.get("package", {}).get("commit", "?")[:7]
    return (
        f"{record['host']['name']}, {record['time_utc']} UTC, the package at `{package}`",
        f"`benchmarks/results/{name}`",
    )


def larger_inputs():
    record, name = records.scale_record()
    batch, lines, findings = _scale_summary(record)
    where, link = _measured_where(record, name)
    text = [
        f"Measured by `benchmarks/scale.py` on {where}: the median training step\nat batch {batch}, 10 classes, random RGB "
        "images, each configuration in a fresh process; the process's peak resident\nmemory during training (TensorFlow alone "
        "holds about 0.7 GB of it) and the step as a multiple of the matched\n`BaselineCNN`'s at the same input. Run record: "
        f"{link}; all figures, inference\nand arithmetic included: `docs/benchmarks/scaling.md`.",
        "",
        *lines,
        "",
        *findings,
    ]
    supplement = records.supplement_record()
    if supplement is not None:
        extra, extra_name = supplement
        extra_batch, extra_lines, extra_findings = _scale_summary(extra)
        check(extra_batch == batch, "the supplement trains at the sweep's batch")
        extra_where, extra_link = _measured_where(extra, extra_name)
        sizes = ", ".join(f"{s}×{s}×3" for s in sorted(records.sizes(extra)))
        text += [
            "",
            f"At {sizes}, measured in a run of its own on {extra_where} (run record: {extra_link}), the same way: "
            "each step against that run's `BaselineCNN`; the memory a step needs is the same on any machine.",
            "",
            *extra_lines,
            "",
            *extra_findings,
        ]
    return "\n".join(text)
