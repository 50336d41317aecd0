"""``routers``'s table and targets: each router alone against dynamic routing."""

from benchmarks.reporting.cells import col, r2, ratio, ratio_of

#: The shapes the targets read: ``python -m benchmarks routers``'s fixed ones (a sweep's, ``fc_in<N>`` and
#: ``fc_out<N>``, are tabled but judged by no target, so a sweep's run beside a fixed one is no second run).
TARGET_SHAPES = ("fc", "conv")


def per_iterations(router_prefix):
    """A target's items: per iteration count, each fixed shape's forward time over dynamic routing's."""

    def items(rows):
        rows = [r for r in rows if r["router"].startswith(router_prefix) and r["shape"] in TARGET_SHAPES]
        out = []
        for it in sorted({r["iterations"] for r in rows}):
            sel = [r for r in rows if r["iterations"] == it]
            values = [ratio(r["forward_ms"], r["dynamic_forward_ms"]) for r in sel]
            out.append(
                (
                    f"{it} iteration{'s' * (it != 1)}",
                    values,
                    " / ".join(f"{r2(v)}× {r['shape']}" for r, v in zip(sel, values)),
                )
            )
        return out

    return items


#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="routers",
        heading="Routers against dynamic routing",
        rows=("routers",),
        intro="One capsule layer; fc: `FcCaps` 1152 × 8D → 10 × 16D at b64, conv: `ConvCaps` 6×6×32 × 8D → K3 s1 32 × 8D at b16; "
        "each router over dynamic routing of the same run, shape and iterations.",
        columns=[
            col("shape"),
            col("router"),
            col("iterations", "> iterations"),
            col("forward_ms", "> forward (ms)"),
            ("> forward / dynamic", ratio_of("forward_ms", "dynamic_forward_ms")),
            col("train_ms", "> training step (ms)"),
            ("> training / dynamic", ratio_of("train_ms", "dynamic_train_ms")),
        ],
    ),
]

#: The targets read from them (:func:`benchmarks.reporting.verdicts.verdict_rows`).
VERDICTS = [
    dict(
        target="FM forward no slower than one dynamic-routing iteration",
        rows="routers",
        items=per_iterations("fm_agreement"),
        bound=("<=", 1.0),
        table="routers",
    ),
    dict(
        target="LSTM router forward ≤ 4× dynamic routing",
        rows="routers",
        items=per_iterations("lstm"),
        bound=("<=", 4.0),
        table="routers",
    ),
    dict(
        target="kernel router forward ≤ 4× dynamic routing",
        rows="routers",
        items=per_iterations("kernel"),
        bound=("<=", 4.0),
        table="routers",
    ),
]
