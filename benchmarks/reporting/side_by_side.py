"""The side-by-side harness's tables and targets (``python -m benchmarks side_by_side``): the library against the
authors' code, InvertedAttentionCapsNet against apple's, DR-CapsNet against EIDOSLAB/REM's, Efficient-CapsNet
against EscVM's, the FM network against bhneo/FMRouting's, and the library's side of each pair before and after
the scaling work."""

from benchmarks.reporting.cells import PEER_RATIO, RSS_PAIR, col, num, r2, ratio, ratio_of
from benchmarks.reporting.verdicts import by_ratio, max_item, peer_ratios


def seed_pair(side):
    return lambda row: " / ".join(num(row.get(f"{side}_{m}_ms")) for m in ("fm", "dr1", "dr3"))


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


def seed_items(rows):
    sel = [r for r in rows if r["call"] == "predict_on_batch"]
    return [("", [r["ours_dr3_ms"] / r["ours_fm_ms"] for r in sel], "")]


#: The tables, in page order (:data:`benchmarks.reporting.pages.DETAIL` places them).
TABLES = [
    dict(
        key="idpa",
        heading="InvertedAttentionCapsNet against apple's PyTorch code",
        rows=("idpa-train",),
        intro="Training step, CIFAR-10, b32, by routing iterations ('ours alone': the library side rerun alone).",
        columns=[
            col("configuration", "backbone"),
            col("iterations", "> iterations"),
            col("peer_ms", "> apple's (ms)"),
            col("ours_ms", "> ours (ms)"),
            PEER_RATIO,
            RSS_PAIR,
        ],
    ),
    dict(
        key="idpa-b128",
        heading=None,
        rows=("idpa-b128",),
        intro="Training step at b128 with 3 iterations:",
        columns=[
            col("configuration"),
            col("peer", "apple's"),
            col("ours_ms", "> ours, step (ms)"),
            col("ours_rss_gb", "> ours, peak RSS (GB)"),
        ],
    ),
    dict(
        key="dr-rem",
        heading="DR-CapsNet against EIDOSLAB/REM's PyTorch code",
        rows=("dr-rem",),
        intro="Training step, b128.",
        columns=[
            col("configuration"),
            col("peer_ms", "> REM (ms)"),
            col("ours_ms", "> ours (ms)"),
            PEER_RATIO,
            RSS_PAIR,
        ],
    ),
    dict(
        key="dr-rem-floor",
        heading=None,
        rows=("dr-rem-floor",),
        intro="The kernel floor: the network's two convolutions alone (9×9 1→256 ReLU, 9×9 256→256 stride 2, a mean "
        "and a mean-square loss, Adam), in each framework's own kernels, same loop as above; their share of each "
        "side's full step of the same run.",
        columns=[
            col("configuration"),
            col("peer_ms", "> torch (ms)"),
            col("ours_ms", "> TensorFlow (ms)"),
            PEER_RATIO,
            ("> share of REM's step", ratio_of("peer_ms", "peer_step_ms")),
            ("> share of our step", ratio_of("ours_ms", "ours_step_ms")),
        ],
    ),
    dict(
        key="effcaps",
        heading="Efficient-CapsNet against EscVM's code",
        rows=("effcaps-train", "effcaps-infer"),
        intro="With its reconstruction decoder; `fit` steps and inference.",
        columns=[
            col("configuration"),
            col("peer_ms", "> EscVM (ms)"),
            col("ours_ms", "> ours (ms)"),
            PEER_RATIO,
            RSS_PAIR,
        ],
    ),
    dict(
        key="seed003",
        heading="The FM-agreement network (Zhao, Wang & Huang) against bhneo/FMRouting's code",
        rows=("seed003",),
        intro="Inference at b128, FM / DR(1) / DR(3) in ms; FM without the vote batch norm, as the authors' network "
        "(FM_bn: keras-capsules' default FM router).",
        columns=[
            col("call"),
            (">bhneo FM / DR(1) / DR(3)", seed_pair("peer")),
            (">ours FM / DR(1) / DR(3)", seed_pair("ours")),
            ("> ours FM_bn", lambda row: num(row.get("ours_fm_bn_ms"))),
            ("> DR(3) / FM, bhneo", ratio_of("peer_dr3_ms", "peer_fm_ms")),
            ("> DR(3) / FM, ours", ratio_of("ours_dr3_ms", "ours_fm_ms")),
        ],
    ),
    dict(
        key="peer-pairs-before-after",
        heading="The side-by-side configurations before and after the scaling work",
        rows=("peer-pairs-before-after",),
        intro="The library's side of each side-by-side configuration above, the package before the scaling work (convolutional capsule layers made to scale to larger inputs) "
        "(the run file's `before`) against the package measured beside the peers (`after`), in alternating fresh "
        "processes of the same run (the harness's `ab_trees.sh`), medians over the rounds of each process's median "
        "step: under 1 the ratios against the authors' code improved.",
        columns=[
            col("pair"),
            col("configuration"),
            col("before_ms", "> before (ms)"),
            col("after_ms", "> after (ms)"),
            ("> after / before", ratio_of("after_ms", "before_ms")),
            (
                "each process, before · after (ms)",
                lambda row: " · ".join(
                    "/".join(num(v) for v in row[f"{side}_each_ms"]) for side in ("before", "after")
                ),
            ),
        ],
    ),
]

#: The targets read from them (:func:`benchmarks.reporting.verdicts.verdict_rows`).
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
        target="FM-agreement network (Zhao, Wang & Huang): DR(3) / FM ≥ 1.26 at b128 (`predict_on_batch`)",
        rows="seed003",
        items=seed_items,
        bound=(">=", 1.26),
        aggregate="median",
        table="seed003",
    ),
]
