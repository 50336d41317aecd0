"""Why the slowest steps stay slow: their counted flops and memory traffic, and the first step's tracing."""

import statistics

from figures import records
from figures.numbers import check

#: The applications "Why ... stay slow" explains, each with the reference its counts are set against.
SLOW = (("MatrixCapsNet", "BaselineCNN"), ("ConsensusCapsNet", "ConsensusCapsNet-dynamic"))


def _largest_op(row):
    """``(op type, share of the step's flops)`` of the op type that counts the most flops."""
    top = row["op_types"][0]
    return top["op_type"], top["mflop_per_image"] / (1e3 * row["gflop_per_image"])


def why_slow():
    """The counted figures of the two slowest steps (step-cost record) and the GFLOP/s they achieved (scale record)."""
    counts, counts_name = records.step_cost_record()
    scale, scale_name = records.scale_record()
    size = 64
    shape = f"{size}x{size}x3"
    rows = {row["application"]: row for row in counts["rows"] if row["input"] == shape}
    achieved = {row["application"]: row for row in scale["rows"] if row["size"] == size and row["status"] == "measured"}
    cnn = rows["BaselineCNN"]
    batch = cnn["batch"]
    check(all(row["batch"] == batch for row in rows.values()), "every counted step is at one batch")
    lines = []
    for application, reference in SLOW:
        row, base = rows[application], rows[reference]
        written_gb = 4 * row["m_written_per_image"] * batch / 1e3
        op_type, share = _largest_op(row)
        sentence = (
            f"- `{application}`: {row['gflop_per_image']:.3g} GFLOP per image, {row['m_written_per_image']:,.0f} M float32 "
            f"values written per image ({written_gb:,.0f} GB a step at batch {batch}), {row['flops_per_byte']:.2f} flops "
            f"per byte written against {cnn['flops_per_byte']:.1f} for the CNN's convolutions; "
            f"{row['m_transcendental_per_image']:,.1f} M transcendental evaluations (exp, cos, ...) per image"
        )
        if reference != "BaselineCNN":
            check(
                row["m_transcendental_per_image"] > 10 * base["m_transcendental_per_image"],
                f"{application}'s kernel evaluations outnumber {reference}'s many times",
            )
            sentence += (
                f", {row['m_transcendental_per_image'] / base['m_transcendental_per_image']:,.0f}× the "
                f"{base['m_transcendental_per_image']:.2f} M of the same network with dynamic routing"
            )
        sentence += f"; {op_type} counts {100 * share:.0f} % of its flops."
        lines.append(sentence)
    check(
        all(rows[a]["flops_per_byte"] < cnn["flops_per_byte"] / 10 for a, _ in SLOW),
        "both steps do far less arithmetic per byte than the CNN",
    )
    rates = [a for a, _ in SLOW if a in achieved]
    if "BaselineCNN" in achieved and rates:
        cnn_rate = achieved["BaselineCNN"]["gflops"]
        figures_ = ", ".join(f"`{a}` {achieved[a]['gflops']:.3g}" for a in rates)
        lines.append(
            f"- On {scale['host']['name']} (`benchmarks/results/{scale_name}`) their steps achieved {figures_} GFLOP/s, "
            f"the CNN's {cnn_rate:.3g}."
        )
    lines.append(_traffic_bound(TRAFFIC_BOUND, rows[TRAFFIC_BOUND], cnn, achieved, scale["host"]["name"]))
    lines.append(_first_step_bound())
    return "\n".join(
        [
            f"Counted by `benchmarks/scale_counts.py` from each training step's graph at {size}×{size}×3 (run record: "
            f"`benchmarks/results/{counts_name}`; the counts are the same on any machine):",
            "",
            *lines,
        ]
    )


#: The network with less arithmetic than the CNN whose step is still several times the CNN's: "why slow" says what bounds it.
TRAFFIC_BOUND = "ConsensusCapsNet-dynamic"


def _traffic_bound(application, row, cnn, achieved, host_name):
    """One sentence: ``application`` counts fewer flops than the CNN but writes many times its values (step-cost record)."""
    check(row["gflop_per_image"] < cnn["gflop_per_image"], f"{application} counts fewer flops per image than the CNN")
    written = row["m_written_per_image"] / cnn["m_written_per_image"]
    check(written > 10, f"{application} writes more than 10x the CNN's values per image")
    sentence = (
        f"- `{application}`: {row['gflop_per_image']:.3g} GFLOP per image, fewer than the CNN's {cnn['gflop_per_image']:.3g}, "
        f"but {row['m_written_per_image']:,.0f} M float32 values written per image, {written:.0f}× the CNN's "
        f"{cnn['m_written_per_image']:.1f} M ({row['flops_per_byte']:.2f} flops per byte written): its step is bound by "
        "memory traffic, not by arithmetic"
    )
    if application in achieved and "BaselineCNN" in achieved:
        ratio = achieved[application]["step_ms"] / achieved["BaselineCNN"]["step_ms"]
        sentence += f"; on {host_name} its step was {ratio:.1f}× the CNN's"
    return sentence + "."


#: The first step's target in BENCHMARKS.md (tracing included, at 64x64x3), in seconds.
FIRST_STEP_LIMIT_S = 30


def _first_step_bound():
    """One sentence: the applications whose first step (first-step record) passes the limit, and how much of it is
    one step; or, where none passes, the first steps of those the record measured."""
    record, name = records.first_step_record()
    measured, over = [], []
    for row in record["rows"]:
        if row["status"] != "measured":
            continue
        first = statistics.median(row["after_first_step_s"])
        measured.append((row["application"], first, row["after_step_s"]))
        if first > FIRST_STEP_LIMIT_S:
            over.append(measured[-1])
    check(bool(measured), f"{name} measured some first step")
    parts = "; ".join(
        f"`{application}` {first:.1f} s, of which a step takes {step:.1f} s"
        + (f" (tracing and the rest {first - step:.1f} s)" if over else "")
        for application, first, step in over or measured
    )
    beyond = [application for application, first, step in over if first - step >= FIRST_STEP_LIMIT_S]
    if not over:
        ending = f"Each application that run measured is within {FIRST_STEP_LIMIT_S} s."
    elif beyond:
        ending = (
            f"Less its step, {', '.join(f'`{a}`' for a in beyond)} still passes {FIRST_STEP_LIMIT_S} s: tracing and "
            "compiling alone take longer than the limit."
        )
    else:
        ending = (
            f"Less its step, each is within {FIRST_STEP_LIMIT_S} s: the step's own time, bound as above, is what "
            "carries it past the limit."
        )
    return (
        f"- First step, tracing included, at {record['rows'][0]['input'].replace('x', '×')} on {record['host']['name']} "
        f"(`benchmarks/results/{name}`): {parts}. {ending}"
    )
