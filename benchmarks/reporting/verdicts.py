"""The targets and their verdicts: each target, the rows it reads, how one run's rows give its figures, and the bound.

A target is met on a host when every value is within the bound; with ``aggregate="median"`` the host's value
is the median of its runs' values (a rule fixed before the third of those runs). A verdict belongs to its host.
"""

import statistics

from benchmarks.reporting.cells import num, r2, ratio


def peer_ratios(rows):
    return [(row, ratio(row["ours_ms"], row["peer_ms"])) for row in rows if row.get("peer_ms") is not None]


def joined(pairs, label):
    return ", ".join(f"{label(row)} {r2(value)}".strip() for row, value in pairs)


def by_ratio(label):
    def items(rows):
        pairs = peer_ratios(rows)
        return [("", [v for _, v in pairs], joined(pairs, label).strip())]

    return items


def idpa_items(rows):
    pairs = peer_ratios(rows)
    figure = "; ".join(
        f"{c} " + " / ".join(r2(v) for r, v in pairs if r["configuration"] == c)
        for c in dict.fromkeys(r["configuration"] for r, _ in pairs)
    )
    return [("", [v for _, v in pairs], figure + " at 1 / 2 / 3 iterations")]


def idpa_memory_items(rows):
    pairs = [(row, ratio(row["ours_rss_mb"], row["peer_rss_mb"])) for row in rows if row.get("peer_rss_mb")]
    worst = max(pairs, key=lambda p: p[1])[0] if pairs else None
    return (
        [
            (
                "",
                [v for _, v in pairs],
                f"at most {r2(max(v for _, v in pairs))} of apple's "
                f"({num(worst['ours_rss_mb'])} against {num(worst['peer_rss_mb'])} MB, {worst['configuration']}, "
                f"{worst['iterations']} iteration{'s' * (worst['iterations'] != 1)})",
            )
        ]
        if pairs
        else []
    )


def per_iterations(router_prefix):
    def items(rows):
        out = []
        for it in sorted({r["iterations"] for r in rows if r["router"].startswith(router_prefix)}):
            sel = [r for r in rows if r["router"].startswith(router_prefix) and r["iterations"] == it]
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


def first_steps(row):
    """A row's first step (s) of the current package: a scale row's, or the median of a first-step row's processes."""
    return row["first_step_s"] if row["target"] == "scale" else statistics.median(row["after_first_step_s"])


def scale_first_step_items(rows, limit_s=30.0):
    """At 64 px, every application's first step (s); the figure names the longest and every other over ``limit_s``."""
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
    return [("", [r["first_step_s"] for r in sel], figure)]


def memory_items(rows):
    sel = [r for r in rows if r["router"] in ("kernel", "lstm")]
    return [
        (
            f"from {a} to {b} iterations",
            [r[f"live_{b}_mib"] / r[f"live_{a}_mib"] for r in sel],
            ", ".join(f"{r['router']} {num(r[f'live_{a}_mib'])} → {num(r[f'live_{b}_mib'])} MiB" for r in sel),
        )
        for a, b in ((1, 3), (3, 5))
    ]


def memory_plan_items(rows):
    pairs = [(row, row["estimate_bytes"] / row["measured_bytes"]) for row in rows if row.get("measured_bytes")]
    if not pairs:
        return []
    low, high = min(pairs, key=lambda p: p[1]), max(pairs, key=lambda p: p[1])
    skipped = sum(1 for row in rows if row.get("skipped"))
    label = lambda p: f"{r2(p[1])} ({p[0]['configuration']} {p[0]['input']} b{p[0]['batch']})"  # noqa: E731
    return [
        (
            "",
            [abs(v - 1) for _, v in pairs],
            f"estimate / measured from {label(low)} to {label(high)} over {len(pairs)} "
            f"measured configurations" + (f"; {skipped} refused by the estimate, not run" if skipped else ""),
        )
    ]


def seed_items(rows):
    sel = [r for r in rows if r["call"] == "predict_on_batch"]
    return [("", [r["ours_dr3_ms"] / r["ours_fm_ms"] for r in sel], "")]


def max_item(key, select, unit):
    def items(rows):
        sel = [r for r in rows if select(r)]
        return [("", [r[key] for r in sel], ", ".join(f"{r['configuration']} {num(r[key])} {unit}" for r in sel))]

    return items


def effcaps_b1(rows):
    row = next(r for r in rows if r["configuration"] == "EffCapsNet/mnist")
    best = min(
        ("ONNX Runtime", row["onnx_b1"]),
        ("LiteRT", row["litert_b1"]),
        ("SavedModel", row["savedmodel_b1"]),
        key=lambda p: p[1],
    )
    return [("", [best[1]], f"{num(best[1])} ms ({best[0]}); SavedModel {num(row['savedmodel_b1'])} ms")]


def cnn_items(rows):
    sel = [r for r in rows if r["configuration"].startswith("training")]
    values = [r["effcaps_ms"] / r["cnn_ms"] for r in sel]
    return [("", values, ", ".join(f"{r['configuration'].split(', ')[1]} {r2(v)}" for r, v in zip(sel, values)))]


VERDICTS = [
    dict(
        target="InvertedAttentionCapsNet training step ≤ 0.5× apple's, b32, 1 / 2 / 3 iterations",
        summary="InvertedAttentionCapsNet training step, b32, against apple's PyTorch code",
        rows="idpa-train",
        items=idpa_items,
        bound=("<=", 0.5),
        table="idpa",
    ),
    dict(
        target="its peak memory ≤ apple's", rows="idpa-train", items=idpa_memory_items, bound=("<=", 1.0), table="idpa"
    ),
    dict(
        target="3 iterations at b128 under 8 GB",
        rows="idpa-b128",
        items=max_item("ours_rss_gb", lambda r: True, "GB"),
        bound=("<", 8.0),
        table="idpa-b128",
    ),
    dict(
        target="CIFAR-100 configurations under 8 GB at b32",
        rows="applications",
        items=max_item("rss_mib", lambda r: "cifar100" in r["configuration"], "MiB"),
        bound=("<", 8192),
        table="applications",
    ),
    dict(
        target="convolutional capsule layers: live tensors within 2× one vote tensor",
        rows="conv-live",
        items=lambda rows: [
            (
                "",
                [r["live_mib"] / r["votes_mib"] for r in rows],
                f"at most {r2(max(r['live_mib'] / r['votes_mib'] for r in rows))}×",
            )
        ],
        bound=("<=", 2.0),
        table="conv-live",
    ),
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
    dict(
        target="first step (tracing included) within 30 s at 64×64×3",
        rows=("scale", "first-step"),
        items=scale_first_step_items,
        bound=("<=", 30.0),
        table="scale-arithmetic",
    ),
    dict(
        target="DR-CapsNet training step ≤ 0.5× REM's, b128",
        summary="DR-CapsNet training step, b128, against EIDOSLAB/REM's PyTorch code",
        rows="dr-rem",
        items=by_ratio(lambda r: "REM's router" if "REM's router" in r["configuration"] else ""),
        bound=("<=", 0.5),
        table="dr-rem",
    ),
    dict(
        target="Efficient-CapsNet training ≤ 0.5× EscVM's",
        summary="Efficient-CapsNet training step against EscVM's code",
        rows="effcaps-train",
        items=by_ratio(lambda r: r["configuration"].split()[-1]),
        bound=("<=", 0.5),
        table="effcaps",
    ),
    dict(
        target="Efficient-CapsNet inference b64 ≤ 0.6× EscVM's",
        summary="Efficient-CapsNet inference, b64, against EscVM's code",
        rows="effcaps-infer",
        items=by_ratio(lambda r: f"`{r['configuration'].split(', ')[1]}`"),
        bound=("<=", 0.6),
        table="effcaps",
    ),
    dict(
        target="Efficient-CapsNet batch-1 latency under 2 ms, fastest format",
        rows="export",
        items=effcaps_b1,
        bound=("<", 2.0),
        table="export",
    ),
    dict(
        target="Efficient-CapsNet training step ≤ 2.5× a plain CNN's",
        summary="Efficient-CapsNet training step against a CNN of its parameter count, 28×28×1",
        rows="effcaps-vs-cnn",
        items=cnn_items,
        bound=("<=", 2.5),
        table="effcaps-vs-cnn",
    ),
    dict(
        target="FM-agreement network (Zhao, Wang & Huang): DR(3) / FM ≥ 1.26 at b128 (`predict_on_batch`)",
        rows="seed003",
        items=seed_items,
        bound=(">=", 1.26),
        aggregate="median",
        table="seed003",
    ),
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
    dict(
        target="kernel and LSTM forward memory not growing with the iterations",
        rows="router-memory",
        items=memory_items,
        bound=("<=", 1.0),
        table="router-memory",
    ),
    dict(
        target="memory plan: estimate within ±30 % of the measured peak, every application",
        rows="memory-plan",
        items=memory_plan_items,
        bound=("<=", 0.30),
        table="memory-plan",
    ),
]


def within(value, bound):
    op, limit = bound
    return {"<=": value <= limit, "<": value < limit, ">=": value >= limit}[op]


def verdict_rows(spec, runs):
    """[(host name, [(scope, figure, met)], runs)] for one target: one entry per host."""
    per_host = {}
    for run in runs:
        targets = spec["rows"] if isinstance(spec["rows"], tuple) else (spec["rows"],)
        rows = [r for r in run["rows"] if r["target"] in targets]
        for scope, values, figure in spec["items"](rows) if rows else []:
            if values:
                per_host.setdefault(run["host"]["id"], {}).setdefault(scope, []).append((run, values, figure))
    out = []
    for scopes in per_host.values():
        results, used = [], []
        for scope, found in scopes.items():
            used += [run for run, _, _ in found if run not in used]
            if spec.get("aggregate") == "median":
                each = [values[0] for _, values, _ in found]
                value = statistics.median(each)
                figure = (
                    f"median of {len(each)} runs {r2(value)} ({', '.join(r2(v) for v in each)} in the order run)"
                    if len(each) > 1
                    else r2(value)
                )
                results.append((scope, figure, within(value, spec["bound"])))
                continue
            if len(found) > 1:
                raise ValueError(
                    f"report: {spec['target']!r} has {len(found)} runs on host {found[0][0]['host']['name']!r}; "
                    "move the superseded one out of benchmarks/results/"
                )
            _, values, figure = found[0]
            results.append((scope, figure, all(within(v, spec["bound"]) for v in values)))
        out.append((used[0]["host"]["name"], results, used))
    return out
