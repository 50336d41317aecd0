"""``first_step``'s table and target: every application's first step, tracing included, before and after."""

import statistics

from benchmarks.reporting.cells import before_after, col, measured_only, num, r2


def first_steps(row):
    """A row's first step (s) of the current package: a scale row's, or the median of a first-step row's processes."""
    return row["first_step_s"] if row["target"] == "scale" else statistics.median(row["after_first_step_s"])


def scale_first_step_items(rows, limit_s=30.0):
    """At 64 px, every application's first step (s); the figure names the longest and every other over ``limit_s``,
    and how many applications the run measured (a run of some applications speaks for those alone)."""
    sel = sorted(
        ({**r, "first_step_s": first_steps(r)} for r in rows if r["size"] == 64 and r["status"] == "measured"),
        key=lambda r: -r["first_step_s"],
    )
    if not sel:
        return []
    others = [f"{r['application']} {r['first_step_s']:g} s" for r in sel[1:] if r["first_step_s"] > limit_s]
    figure = f"longest {sel[0]['application']} {sel[0]['first_step_s']:g} s" + (
        f"; also over {limit_s:g} s: {', '.join(others)}" if others else ""
    )
    figure += f" ({len(sel)} application{'s' if len(sel) > 1 else ''} measured)"
    return [("", [r["first_step_s"] for r in sel], figure)]


#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
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
]

#: The targets read from them (:func:`benchmarks.reporting.verdicts.verdict_rows`).
VERDICTS = [
    dict(
        target="first step (tracing included) within 30 s at 64×64×3",
        rows=("scale", "first-step"),
        items=scale_first_step_items,
        bound=("<=", 30.0),
        table="scale-arithmetic",
    ),
]
