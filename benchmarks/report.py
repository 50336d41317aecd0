"""Writes ``BENCHMARKS.md`` from the run files committed under ``benchmarks/results/``.

    python -m benchmarks report           # rewrites BENCHMARKS.md
    python -m benchmarks report --check   # exits 1 if BENCHMARKS.md differs from what the run files give

A run file is ``benchmarks/results/YYYY-MM-DD-<what>.json``, one per run: the host (``id``, ``cpu``,
``cores``, ``name``), ``date``, ``command``, what was ``measured``, its ``source`` and ``rows``, each row
naming the table it belongs to (``"target"``) and holding the figures as measured. Ratios and verdicts
are computed here from those figures; nothing in BENCHMARKS.md is typed by hand. The scripts' own raw
output (``benchmarks/results/<script>.json``) is not read.
"""

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "BENCHMARKS.md"
RUN_FILE = re.compile(r"^\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.json$")
REQUIRED = ("host", "date", "time_utc", "command", "measured", "source", "rows")
HOST_REQUIRED = ("id", "cpu", "cores", "name")
HISTORY = "9551769"  # the last commit whose BENCHMARKS.md held every run as recorded


# --- loading ----------------------------------------------------------------------------------------


def validate_run(run, name):
    """Raises ``ValueError`` naming the file and the field when a run file lacks what the page needs."""
    for field in REQUIRED:
        if field not in run:
            raise ValueError(f"report: run file {name} has no {field!r} field (required: {', '.join(REQUIRED)})")
    for field in ("command", "measured", "source"):
        if not isinstance(run[field], str) or not run[field].strip():
            raise ValueError(f"report: run file {name}: {field!r} must be a non-empty string, got {run[field]!r}")
    if not isinstance(run["host"], dict) or any(not run["host"].get(f) for f in HOST_REQUIRED):
        raise ValueError(f"report: run file {name}: 'host' must give {', '.join(HOST_REQUIRED)}, got {run['host']!r}")
    if not isinstance(run["host"]["cores"], int) or run["host"]["cores"] < 1:
        raise ValueError(
            f"report: run file {name}: host 'cores' must be a positive integer, got {run['host']['cores']!r}"
        )
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(run["date"])) or not name.startswith(run["date"]):
        raise ValueError(
            f"report: run file {name}: 'date' must be YYYY-MM-DD and start the file name, got {run['date']!r}"
        )
    if not isinstance(run["rows"], list) or not run["rows"]:
        raise ValueError(f"report: run file {name}: 'rows' must be a non-empty list")
    for row in run["rows"]:
        if row.get("target") not in TABLE_KEYS:
            raise ValueError(
                f"report: run file {name}: row target {row.get('target')!r} is none of {sorted(TABLE_KEYS)}"
            )


def load_runs(folder=RESULTS):
    """The run files of ``folder``, validated, oldest first; each gains ``file`` (its name)."""
    runs, hosts = [], {}
    for path in sorted(folder.iterdir()):
        if not RUN_FILE.match(path.name):
            continue
        run = json.loads(path.read_text(encoding="utf-8"))
        validate_run(run, path.name)
        host = run["host"]
        if hosts.setdefault(host["id"], host["name"]) != host["name"]:
            raise ValueError(
                f"report: run file {path.name}: host id {host['id']!r} is named {hosts[host['id']]!r} elsewhere"
            )
        runs.append(dict(run, file=path.name))
    names = list(hosts.values())
    if len(set(names)) != len(names):
        raise ValueError(f"report: two host ids share one name: {names}")
    return runs


# --- formatting -------------------------------------------------------------------------------------


def num(value):
    """A figure as recorded: thousands separated, ``—`` where there is none."""
    if value is None:
        return "—"
    if isinstance(value, (int, float)):
        return f"{value:,}"
    return str(value)


def ratio(numerator, denominator):
    return None if numerator is None or denominator is None else numerator / denominator


def r2(value):
    return "—" if value is None else f"{value:.2f}"


def run_label(run):
    time = run["time_utc"]
    return run["host"]["name"] + (f", {time.split('-')[0]} UTC" if time and time[0].isdigit() else "")


def table(headers, lines):
    """A Markdown table; a header starting with ">" is right-aligned."""
    out = [
        "| " + " | ".join(h.lstrip("> ") for h in headers) + " |",
        "|" + "|".join("---:" if h.startswith(">") else "---" for h in headers) + "|",
    ]
    out += ["| " + " | ".join(cells) + " |" for cells in lines]
    return out


# --- the tables -------------------------------------------------------------------------------------
# Each: key, heading, intro, the row keys it shows, and its columns ("> " right-aligns): (header, f(row)).


def col(key, header=None):
    return (header or key, lambda row: num(row.get(key)))


PEER_RATIO = ("> ours / peer", lambda row: r2(ratio(row.get("ours_ms"), row.get("peer_ms"))))
RSS_PAIR = ("> peak RSS peer / ours (MB)", lambda row: f"{num(row.get('peer_rss_mb'))} / {num(row.get('ours_rss_mb'))}")


def ratio_of(a, b):
    return lambda row: r2(ratio(row.get(a), row.get(b)))


def megabytes(key):
    return lambda row: num(None if row.get(key) is None else round(row[key] / 1e6))


def seed_pair(side):
    return lambda row: " / ".join(num(row.get(f"{side}_{m}_ms")) for m in ("fm", "dr1", "dr3"))


def by_policy(rows):
    """One row per model: the step (and its share of float32's) and the accuracy under each policy."""
    out = {}
    for row in rows:
        out.setdefault(row["model"], {"model": row["model"]})[row["policy"]] = row
    return list(out.values())


def policy_step(policy):
    def cell(row):
        if policy not in row:
            return "—"
        step = row[policy]["step_ms"]
        return num(step) + ("" if policy == "float32" else f" ({r2(step / row['float32']['step_ms'])}×)")

    return cell


def accuracies(row):
    return " / ".join(num(row[p]["accuracy_pct"]) if p in row else "—" for p in POLICIES)


POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")


def percent(key):
    """A fraction in ``row[key]`` as a percentage, one decimal; a list of them joined by commas."""

    def cell(row):
        value = row.get(key)
        if value is None:
            return "—"
        return ", ".join(f"{100 * v:.1f}" for v in value) if isinstance(value, list) else f"{100 * value:.1f}"

    return cell


#: The input sides of benchmarks/scale.py's sweep (RGB), one column each.
SCALE_SIZES = (32, 64, 128, 224)


def measured_only(cell):
    """``cell(row)`` for a measured row, a dash for one whose application refused the input."""
    return lambda row: cell(row) if row["status"] == "measured" else "—"


def before_after(key, show):
    """``before_<key>`` and ``after_<key>`` of a row, each shown by ``show``: ``"before · after"``."""
    return lambda row: f"{show(row['before_' + key])} · {show(row['after_' + key])}"


def backend_cell(backend):
    """One backend's step (ms) and first step (s) in a backends row, " (XLA)" when compiled with XLA, or its error."""

    def cell(row):
        if row.get(f"{backend}_error"):
            return row[f"{backend}_error"]
        xla = " (XLA)" if row.get(f"{backend}_xla") else ""
        return f"{num(row.get(f'{backend}_step_ms'))} · {num(row.get(f'{backend}_first_s'))}{xla}"

    return cell


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
        heading="Seed 003's network against bhneo/FMRouting's code",
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
        intro="The library's side of each side-by-side configuration above, the package before issue 52's scaling work "
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
    dict(
        key="router-memory",
        heading=None,
        rows=("router-memory",),
        intro="Forward memory by iterations: live tensors' peak, fc shape.",
        columns=[
            col("router"),
            col("live_1_mib", "> 1 iteration (MiB)"),
            col("live_3_mib", "> 3 (MiB)"),
            col("live_5_mib", "> 5 (MiB)"),
        ],
    ),
    dict(
        key="memory-plan",
        heading="Memory plan: estimate against measured peak",
        rows=("memory-plan",),
        intro="`keras_capsules.training.memory_plan.estimate` (one traced step, no step run; process baseline included) against "
        "the peak resident memory of a fresh process that builds and compiles the model as `train` does and runs three "
        "`train_on_batch` steps; one process per row, each alone. A row whose estimate exceeds 16 GB is not run "
        "(what `memory_plan.check` refuses).",
        columns=[
            col("configuration"),
            col("input"),
            col("batch", "> batch"),
            ("> estimate (MB)", megabytes("estimate_bytes")),
            (
                "> of which activations / votes (MB)",
                lambda row: f"{megabytes('activation_bytes')(row)} / {megabytes('votes_bytes')(row)}",
            ),
            ("> measured peak (MB)", megabytes("measured_bytes")),
            ("> estimate / measured", ratio_of("estimate_bytes", "measured_bytes")),
            ("note", lambda row: row.get("skipped") or row.get("error") or ""),
        ],
    ),
    dict(
        key="memory-plan-calibration",
        heading=None,
        rows=("memory-plan-calibration",),
        intro="The calibration run the two constants `LIVE_FACTOR` and `BYTES_PER_OP` were fitted on (its file's `fit`; least "
        "squares on the relative error), at other batches than the table above; live tensors: the simulated step's peak.",
        columns=[
            col("configuration"),
            col("input"),
            col("batch", "> batch"),
            ("> live tensors (MB)", megabytes("step_live_bytes")),
            col("step_ops", "> ops"),
            ("> measured peak (MB)", megabytes("measured_bytes")),
            ("> fitted estimate / measured", ratio_of("fitted_bytes", "measured_bytes")),
        ],
    ),
    dict(
        key="gpu-presets",
        heading="GPU checks (JAX backend)",
        rows=("gpu-presets",),
        intro="The presets on the full test sets, correct images of 10,000 (the registry's count: a CPU with TensorFlow).",
        columns=[
            col("preset"),
            col("registry", "> registry (CPU)"),
            col("tf32", "> JAX default (TF32)"),
            col("highest", '> `"highest"` precision'),
            col("seconds", "> seconds, compilation included"),
        ],
    ),
    dict(
        key="gpu-mixed-precision",
        heading=None,
        rows=("gpu-mixed-precision",),
        transform=by_policy,
        intro="Mixed precision: two epochs from scratch on the embedded 8,000-image sample; step: median after the "
        "first epoch (in brackets: its share of float32's); accuracy on the other 2,000 images.",
        columns=[col("model")]
        + [(f"> {p} step (ms)", policy_step(p)) for p in POLICIES]
        + [("> accuracy (%), float32 / float16 / bfloat16", accuracies)],
    ),
    dict(
        key="gpu-checks",
        heading=None,
        rows=("gpu-checks",),
        intro="Correctness:",
        prose=lambda cells: ": ".join(cells),
        columns=[col("check"), col("result")],
    ),
    dict(
        key="onednn-main-job",
        heading="The main job with TensorFlow's oneDNN kernels on and off",
        rows=("onednn-main-job",),
        intro="`benchmarks/onednn_main_job.py`: the command line turns oneDNN off on TensorFlow 2.21, whose oneDNN kernels "
        "corrupt the heap now and then (`tools/soak/README.md`); this is what that costs the README's main job per step.",
        columns=[
            col("setting"),
            col("median_ms", "> median step (ms)"),
            col("process_ms", "per process (ms)"),
            col("off_over_on", "> off / on"),
        ],
    ),
    dict(
        key="fine-tune-folder",
        heading="Fine-tuning against training from scratch on a folder of images",
        rows=("fine-tune-folder",),
        intro="`benchmarks/fine_tune_folder.py`: EffCapsNet on one folder of Fashion-MNIST PNG files it writes (the run file's "
        "`folder`), each run one `training.train` call with the generic recipe, the same epochs, seed and stratified "
        "validation hold-out; the test split (`test/`) evaluated once, at the end of each run. It measures accuracy: the "
        "seconds are those of a machine shared with other work.",
        columns=[
            col("run"),
            col("weights"),
            col("freeze_backbone_epochs", "> frozen epochs"),
            col("epochs", "> epochs"),
            (
                "> training / held-out images",
                lambda row: f"{num(row.get('training_examples'))} / {num(row.get('validation_examples'))}",
            ),
            ("validation accuracy after each epoch (%)", percent("validation_accuracy")),
            ("> test accuracy (%)", percent("test_accuracy")),
            col("train_seconds", "> training (s)"),
        ],
    ),
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
        key="roofline",
        heading="Roofline of the routers",
        rows=("roofline",),
        intro="`benchmarks/roofline.py`: each router alone, forward and backward, at the shapes an application routes at "
        "64x64x3 batch 16 (a convolutional layer one output row at a time, as it trains). Work from XLA's cost analysis "
        "under JAX (the library's graph counter beside it); time on TensorFlow with `jit_compile` off (plain) and on "
        "(XLA); attainable = min(matrix-product GFLOP/s, bandwidth x flop per byte), both roofs measured in the run; "
        "share = achieved / attainable. XLA's bytes are its count of every fused operation's operands and results, "
        "not what reaches memory: a share over 100 % means the caches served part of them, so the shares bound the "
        "routers' distance from the memory roof from above, not below. The kernel router's XLA flops include the "
        "polynomial cosine's arithmetic (JAX compiles it; the graph counts each cosine once).",
        columns=[
            col("case"),
            ("votes", lambda row: "x".join(map(str, row["votes"]))),
            ("> GFLOP, XLA · graph", lambda row: f"{row['xla_gflop']:.2f} · {row['graph_gflop']:.2f}"),
            ("> G transcendental", lambda row: f"{row['xla_transcendental_g']:.3f}"),
            ("> GB", lambda row: f"{row['xla_gbytes']:.2f}"),
            ("> flop/B", lambda row: f"{row['intensity_flop_per_byte']:.2f}"),
            ("> roofs GFLOP/s · GB/s", lambda row: f"{row['matmul_gflops']:.0f} · {row['bandwidth_gbs']:.1f}"),
            ("> attainable GFLOP/s", lambda row: f"{row['attainable_gflops']:.1f}"),
            ("> ms, plain · XLA", lambda row: f"{row['plain_ms']:.0f} · {row['xla_ms']:.0f}"),
            ("> share, plain · XLA", lambda row: f"{100 * row['plain_share']:.0f} % · {100 * row['xla_share']:.0f} %"),
        ],
    ),
    dict(
        key="scale-before",
        heading="Capsules at larger inputs, before the scaling work",
        rows=("scale-before",),
        transform=scale_by_application,
        intro="The same measurements (`benchmarks/scale.py --before`) of the package as it was before the convolutional capsule "
        "layers were made to scale (the run file's `package`: issue 52's starting point, the FLOP counter already "
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
TABLE_KEYS = {key for spec in TABLES for key in spec["rows"]}


# --- the verdicts -----------------------------------------------------------------------------------
# Each: the target, its rows (a target name, or a tuple of them), how one run's rows give (scope, values, figure) items, and the bound.
# A target is met on a host when every value is within the bound; with aggregate="median" the host's
# value is the median of its runs' values (a rule fixed before the third of those runs).


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
    """Every application that builds at ``size``: its training peak RSS as a share of ``limit_mb`` (a skipped one: over it)."""

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
        rows="dr-rem",
        items=by_ratio(lambda r: "REM's router" if "REM's router" in r["configuration"] else ""),
        bound=("<=", 0.5),
        table="dr-rem",
    ),
    dict(
        target="Efficient-CapsNet training ≤ 0.5× EscVM's",
        rows="effcaps-train",
        items=by_ratio(lambda r: r["configuration"].split()[-1]),
        bound=("<=", 0.5),
        table="effcaps",
    ),
    dict(
        target="Efficient-CapsNet inference b64 ≤ 0.6× EscVM's",
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
        rows="effcaps-vs-cnn",
        items=cnn_items,
        bound=("<=", 2.5),
        table="effcaps-vs-cnn",
    ),
    dict(
        target="seed 003 network: DR(3) / FM ≥ 1.26 at b128 (`predict_on_batch`)",
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


# --- the page ---------------------------------------------------------------------------------------

METHODS = """\
# Benchmarks

Generated by `python -m benchmarks report` from the run files in [`benchmarks/results/`](benchmarks/results/)
(one JSON file per run: host, date, command, what was measured, the figures); a test fails when this page
differs from them, so edit a run file, never the page. Superseded runs leave the folder; the long page that
recorded every run is in git history: `git show {history}:BENCHMARKS.md`.

## How each figure is measured

- **Side by side, one run, one machine.** A speed claim is a ratio measured in one run on one machine, the
  peer's code and ours in alternating fresh processes (the peers' public code unchanged, run by a harness
  kept outside this repository). These 2-core machines differ by 2× and more (REM's own DR-CapsNet step:
  1,667 ms on one AMD EPYC host, 3,529 ms on another) and drift ±25 % within a run, so a figure from another
  machine or day is never compared with ours, and a ratio near its bound can fall either side in another run.
- **A verdict belongs to its host.** Each verdict names the host it was measured on and does not carry to
  another host; where two hosts disagree, both figures stand.
- Times are medians of steady steps after warm-up (2 threads, XLA off, equal parameter counts on both sides);
  peak RSS is the process's (TensorFlow alone takes about 0.7 GiB); live tensors are TensorFlow's allocator
  statistics. The script computes every ratio and verdict from the recorded figures.
- Export to ONNX and LiteRT, checked against `predict`, is a CI test (`keras_capsules/export/formats_test.py`).

To add a run: run the script (`python benchmarks/<script>.py`; its raw output,
`benchmarks/results/<script>.json`, is not committed), write `benchmarks/results/YYYY-MM-DD-<what>.json`
with the host, the command and the figures, remove the run it supersedes on that host, and run
`python -m benchmarks report`.
"""


def run_stamp(run):
    time = run["time_utc"]
    return run["date"] + (f" {time.split('-')[0]}" if time and time[0].isdigit() else "")


def render(runs):
    lines = METHODS.format(history=HISTORY).splitlines()
    anchors, current = {}, None
    for spec in TABLES:
        current = anchor(spec["heading"]) if spec["heading"] else current
        anchors[spec["key"]] = current
    lines += [
        "",
        "## Where the targets stand",
        "",
        "Met: every value of that host's run within the bound. Each target links to its table.",
        "",
    ]
    cells = []
    for spec in VERDICTS:
        per_host = []
        for host, results, used in verdict_rows(spec, runs):
            found = "; ".join(
                (f"{scope}: " if scope else "") + f"{text} — " + ("met" if met else "**missed**")
                for scope, text, met in results
            )
            links = ", ".join(f"[{run_stamp(r)}](benchmarks/results/{r['file']})" for r in used)
            per_host.append(f"{host}: {found} ({links})")
        if not per_host:
            continue  # a target no committed run measures yet
        cells.append([f"[{spec['target']}](#{anchors[spec['table']]})", "<br>".join(per_host)])
    lines += table(["target", "each host it was measured on: figure — verdict (run)"], cells)
    for spec in TABLES:
        sources = [run for run in runs if any(r["target"] in spec["rows"] for r in run["rows"])]
        if not sources:
            continue
        lines += [""] + ([f"## {spec['heading']}", ""] if spec["heading"] else [])
        many = len(sources) > 1
        where = "" if many else f"[{run_label(sources[0])}](benchmarks/results/{sources[0]['file']}). "
        if spec.get("prose"):
            for run in sources:
                rows = [r for r in run["rows"] if r["target"] in spec["rows"]]
                text = "; ".join(spec["prose"]([call(f, row, rows) for _, f in spec["columns"]]) for row in rows)
                lines += [f"{where}{spec['intro']} {text}."]
            continue
        if where or spec["intro"]:
            lines += [(where + spec["intro"]).strip(), ""]
        body = []
        for run in sources:
            rows = [r for r in run["rows"] if r["target"] in spec["rows"]]
            rows = spec.get("transform", lambda rs: rs)([r for r in rows if spec.get("filter", bool)(r)])
            body += [
                ([run_label(run)] if many else []) + [call(f, row, rows) for _, f in spec["columns"]] for row in rows
            ]
        lines += table((["host"] if many else []) + [h for h, _ in spec["columns"]], body)
    lines += ["", "## The runs", ""]
    noted = set()
    for run in runs:
        note = f" ({run['host']['note']})" if run["host"].get("note") and run["host"]["id"] not in noted else ""
        noted.add(run["host"]["id"])
        lines.append(
            f"- [{run_stamp(run)}](benchmarks/results/{run['file']}), {run['host']['name']}{note}: "
            f"`{run['command']}`: {run['measured']}."
        )
    return "\n".join(lines) + "\n"


def call(f, row, rows):
    return f(row, rows) if f.__code__.co_argcount == 2 else f(row)


def anchor(heading):
    """GitHub's anchor for a ``## heading``."""
    text = re.sub(r"[^\w\- ]", "", heading.lower())
    return text.replace(" ", "-")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if BENCHMARKS.md differs from the run files' page (default: rewrite it)",
    )
    args = parser.parse_args(argv)
    page = render(load_runs())
    if args.check:
        if PAGE.read_text(encoding="utf-8") != page:
            print("BENCHMARKS.md differs from `python -m benchmarks report`'s output: regenerate it", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
