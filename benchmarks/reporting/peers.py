"""Tables of the library against the authors' code: InvertedAttentionCapsNet against apple's, DR-CapsNet against
EIDOSLAB/REM's, Efficient-CapsNet against EscVM's, the FM network against bhneo/FMRouting's, and the library's
side of each pair before and after the scaling work; the exported models' latency and the applications' costs
measured in the same sessions."""

from benchmarks.reporting.cells import PEER_RATIO, RSS_PAIR, col, num, r2, ratio_of


def seed_pair(side):
    return lambda row: " / ".join(num(row.get(f"{side}_{m}_ms")) for m in ("fm", "dr1", "dr3"))


#: The tables of docs/benchmarks/peers.md, in page order.
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
        key="idpa-iterations",
        heading=None,
        rows=("idpa-iterations",),
        intro="Ours alone at 1–5 iterations in one run (`benchmarks/concurrent_iterations.py`, processes alternating): "
        "the increments should be equal from 4 iterations on, where each iteration adds one sweep of all three "
        "capsule layers; below that the second and first ConvCaps layers start forming their votes "
        "(at 3 and 4 iterations).",
        columns=[
            col("iterations", "> iterations"),
            col("ours_ms", "> ours (ms)"),
            col("increment_ms", "> increment (ms)"),
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
        key="conv-live",
        heading=None,
        rows=("conv-live",),
        intro="Its convolutional capsule layers' memory in one training step: live tensors (the most TensorFlow's "
        "tensors held at once) against the model's largest vote tensor.",
        columns=[
            col("configuration"),
            col("batch", "> batch"),
            col("iterations", "> iterations"),
            col("rss_mib", "> peak RSS (MiB)"),
            col("live_mib", "> live tensors (MiB)"),
            col("votes_mib", "> largest vote tensor (MiB)"),
            ("> live / votes", ratio_of("live_mib", "votes_mib")),
        ],
    ),
    dict(
        key="applications",
        heading=None,
        rows=("applications",),
        filter=lambda r: "cifar100" in r["configuration"],
        intro="The CIFAR-100 configurations at b32 (the run file has all 26 applications):",
        columns=[
            col("configuration"),
            col("parameters", "> parameters"),
            col("train_ms", "> training step (ms)"),
            col("infer_ms", "> inference (ms / batch of 64)"),
            col("rss_mib", "> peak RSS (MiB)"),
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
        key="dr-rem-profile",
        heading=None,
        rows=("dr-rem-profile",),
        intro="Where our step goes (`benchmarks/profile_step.py CapsNet/mnist-official-bias --batch 128`, TensorFlow's "
        "profiler, which slows the step; the shares are what counts): the convolution that makes the primary "
        "capsules sets the floor, its input gradient the largest kernel.",
        columns=[
            col("part"),
            col("ms", "> ms per profiled step"),
            ("> share", lambda row: f"{100 * row['share']:.1f} %"),
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
        key="effcaps-floor",
        heading=None,
        rows=("effcaps-floor",),
        intro="What its inference has left to gain (b64, shares of our own `predict_on_batch` in one process): EscVM's "
        "network makes the same four convolutions, so their time bounds any float32 implementation of it.",
        columns=[col("variant"), col("ms", "> ms"), ("> share", lambda row, rows: r2(row["ms"] / rows[0]["ms"]))],
        prose=lambda cells: f"{cells[0]} {cells[1]} ms ({cells[2]})",
    ),
    dict(
        key="export",
        heading=None,
        rows=("export",),
        filter=lambda r: r["configuration"].startswith("EffCapsNet"),
        intro="Exported, then run without keras_capsules, ms (the run file has all 11 exported models):",
        columns=[col("configuration")]
        + [
            col(f"{fmt}_b{b}", f"> {label} b{b}")
            for fmt, label in (("savedmodel", "SavedModel"), ("onnx", "ONNX Runtime"), ("litert", "LiteRT"))
            for b in (1, 64)
        ],
    ),
    dict(
        key="effcaps-vs-cnn",
        heading=None,
        rows=("effcaps-vs-cnn",),
        intro="Against a plain CNN with the same parameter count (1,573,744 against 1,573,955, 28×28×1):",
        columns=[
            col("configuration"),
            col("effcaps_ms", "> EffCapsNet (ms)"),
            col("cnn_ms", "> CNN (ms)"),
            ("> ratio", ratio_of("effcaps_ms", "cnn_ms")),
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
