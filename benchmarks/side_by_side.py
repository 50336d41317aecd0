"""The library against the authors' code: the side-by-side harness's results written as a run file.

The harness that runs the papers' public code beside ours is kept outside this repository (it imports the
authors' code, which is not ours to copy; ``benchmarks/peers_bench.patch`` holds our changes to it). Its
``run_pair.sh PAIR [STEPS]`` runs each configuration's peer process, then ours, for some rounds, and appends
one JSON line per process to its ``results.jsonl``: ``pair``, ``label``, ``round``, ``side`` (``peer`` or
``lib``), the process's median step ``median_ms`` and peak RSS ``peak_rss_mb``, or an ``error``. This workload
reads those lines and writes the run file ``python -m benchmarks report`` renders (:func:`benchmarks.runs.write_run`):
per configuration and side the median over the rounds of each process's median step, and the largest peak RSS.

The harness's ``ab_trees.sh`` (in the patch) times our side alone, two source trees of the package in
alternating processes; ``--before-after`` turns its output into ``peer-pairs-before-after`` rows.

Usage: ``python -m benchmarks side_by_side [RESULTS.jsonl] [--before-after AB.jsonl --before TREE --after TREE]
--software TEXT --measured TEXT [--pairs effcaps,rem] [--tag TAG] [--started "YYYY-MM-DD HH:MM"] [--ended ...]
[--package-commit SHA] [--results DIR] [--host-name NAME]`` (times in UTC; by default both are the input files'
latest modification time).
"""

import argparse
import datetime
import json
import os
import re
import statistics
import sys

from benchmarks.runs import HERE, write_run

#: ``(pair, label)`` -> ``(row target, configuration)`` of the configurations whose row holds one peer/ours pair.
PAIRED = {
    ("effcaps", "train_b16"): ("effcaps-train", "fit step b16"),
    ("effcaps", "train_b64"): ("effcaps-train", "fit step b64"),
    ("effcaps", "infer_b64_pob"): ("effcaps-infer", "inference b64, predict_on_batch"),
    ("effcaps", "infer_b64_predict"): ("effcaps-infer", "inference b64, predict"),
    ("rem", "train_b128"): (
        "dr-rem",
        "CapsNet, 3 iterations, routing bias, b128 (our dynamic router: gradients through every iteration)",
    ),
    ("rem", "train_b128_remrouter"): (
        "dr-rem",
        "the same with REM's router (votes detached in the first two iterations, as REM's code)",
    ),
    ("rem", "convonly_b128"): ("dr-rem-floor", "two convolutions only, b128"),
}
#: The harness's names of the FM network's inference calls.
FM_CALLS = {"pob": "predict_on_batch", "predict": "predict"}
IDPA_BACKBONES = {"simple": "simple", "resnet": "ResNet"}
#: The pairs this workload turns into rows.
PAIRS = ("effcaps", "rem", "fm", "idpa_simple", "idpa_resnet", "idpa_b128")


def read_results(path, tag=None, pairs=PAIRS):
    """``{(pair, label): {"peer": [record], "lib": [record]}}`` of the harness's lines in ``path`` (those of
    ``tag`` only when given), in the order first seen; lines of other pairs are left out."""
    found = {}
    with open(path) as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as error:
                raise ValueError(f"side_by_side: {path} line {number} is not JSON ({error})") from None
            if record.get("pair") not in pairs or (tag is not None and record.get("tag") != tag):
                continue
            if record.get("side") not in ("peer", "lib"):
                raise ValueError(
                    f"side_by_side: {path} line {number}: 'side' must be 'peer' or 'lib', got {record.get('side')!r}"
                )
            found.setdefault((record["pair"], record["label"]), {"peer": [], "lib": []})[record["side"]].append(record)
    return found


def side_figures(records):
    """``(median ms, peak RSS MB, error)`` of one side's processes: the median over them of each one's median step
    and the largest peak RSS, of those that gave a step; the last error when none did; ``None`` where none ran."""
    timed = [r for r in records if r.get("median_ms") is not None and not r.get("error")]
    if not timed:
        errors = [r.get("error") for r in records if r.get("error")]
        return None, None, (errors[-1] if errors else None)
    rss = [r.get("peak_rss_mb") or r.get("peak_rss_mb_gnu_time") for r in timed]
    rss = [v for v in rss if v is not None]
    return round(statistics.median(r["median_ms"] for r in timed), 1), (round(max(rss)) if rss else None), None


def pair_row(target, configuration, sides):
    peer_ms, peer_rss, _ = side_figures(sides["peer"])
    ours_ms, ours_rss, _ = side_figures(sides["lib"])
    return {
        "target": target,
        "configuration": configuration,
        "peer_ms": peer_ms,
        "ours_ms": ours_ms,
        "peer_rss_mb": peer_rss,
        "ours_rss_mb": ours_rss,
    }


def rem_rows(found):
    """DR-CapsNet's rows: ours with REM's router against REM's own step (that job has no peer process of its
    own), and the two convolutions' floor with each side's full step beside it."""
    reference = found.get(("rem", "train_b128"), {"peer": [], "lib": []})
    peer_step, peer_rss, _ = side_figures(reference["peer"])
    rows = []
    for label in ("train_b128", "train_b128_remrouter", "convonly_b128"):
        if ("rem", label) not in found:
            continue
        row = pair_row(*PAIRED["rem", label], found["rem", label])
        if label == "train_b128_remrouter" and row["peer_ms"] is None:
            row.update(peer_ms=peer_step, peer_rss_mb=peer_rss)
        if label == "convonly_b128":
            del row["peer_rss_mb"], row["ours_rss_mb"]
            row.update(peer_step_ms=peer_step, ours_step_ms=side_figures(reference["lib"])[0])
        rows.append(row)
    return rows


def fm_rows(found):
    """The FM network's rows: one per inference call, FM / DR(1) / DR(3) on each side and ours with FM_bn."""
    rows = {}
    for (pair, label), sides in found.items():
        if pair != "fm":
            continue
        method, mode = re.fullmatch(r"light_(FM_bn|FM|DR1|DR3)_(\w+)", label).groups()
        row = rows.setdefault(mode, {"target": "seed003", "call": FM_CALLS.get(mode, mode)})
        if method == "FM_bn":
            row["ours_fm_bn_ms"] = side_figures(sides["lib"])[0]
        else:
            row[f"peer_{method.lower()}_ms"] = side_figures(sides["peer"])[0]
            row[f"ours_{method.lower()}_ms"] = side_figures(sides["lib"])[0]
    return list(rows.values())


def idpa_rows(found):
    """InvertedAttentionCapsNet's rows: the b32 step by backbone and iterations, and the b128 step (apple's
    code ran out of memory there: its row says what it gave instead of a step)."""
    rows = []
    for (pair, label), sides in found.items():
        if pair in ("idpa_simple", "idpa_resnet"):
            backbone, iterations = re.fullmatch(r"(\w+?)_r(\d)_b32", label).groups()
            row = pair_row("idpa-train", IDPA_BACKBONES[backbone], sides)
            rows.append(
                {"target": "idpa-train", "configuration": row["configuration"], "iterations": int(iterations)} | row
            )
        elif pair == "idpa_b128":
            peer_ms, _, peer_error = side_figures(sides["peer"])
            ours_ms, ours_rss, _ = side_figures(sides["lib"])
            peer = f"{peer_ms:,} ms" if peer_ms is not None else f"no step: {(peer_error or 'not run')[:120]}"
            rows.append(
                {
                    "target": "idpa-b128",
                    "configuration": f"{label.split('_')[0]}, 3 iterations, b128",
                    "peer": peer,
                    "ours_ms": ours_ms,
                    "ours_rss_gb": None if ours_rss is None else round(ours_rss / 1000, 2),
                }
            )
    return rows


def rows_of(found):
    """The run file's rows of the harness's records (:func:`read_results`), pair by pair."""
    effcaps = [pair_row(*PAIRED[key], sides) for key, sides in found.items() if key[0] == "effcaps" and key in PAIRED]
    return effcaps + rem_rows(found) + fm_rows(found) + idpa_rows(found)


def before_after_configuration(job):
    """``(pair, configuration)`` of one library job of the harness (its ``name`` and ``batch``)."""
    name, batch = job.get("name") or "", job.get("batch")
    if name.startswith("effcaps_"):
        call = {"effcaps_train": "fit step", "effcaps_infer": "inference", "effcaps_infer_predict": "inference"}
        suffix = ", predict" if name.endswith("_predict") else (", predict_on_batch" if "infer" in name else "")
        return "effcaps", f"Efficient-CapsNet + decoder, {call[name]} b{batch}{suffix}"
    match = re.fullmatch(r"fm_(light|resnet)_(FM_bn|FM|DR1|DR3)_(\w+)", name)
    if match:
        arch, method, mode = match.groups()
        method = {"DR1": "DR(1)", "DR3": "DR(3)"}.get(method, method)
        network = "FM-agreement network (Zhao, Wang & Huang)" + (", ResNet" if arch == "resnet" else "")
        pair = "fm" if arch == "light" else "fm_resnet"
        return pair, f"{network}, {method}, inference b{batch}" + ("" if mode == "pob" else f", {mode}")
    if name.startswith("rem_drcapsnet"):
        return "rem", "DR-CapsNet" + (
            " without routing bias" if name.endswith("_nobias") else ""
        ) + f", training step b{batch}"
    match = re.fullmatch(r"idpa_(\w+)_r(\d+)", name)
    if match:
        backbone, iterations = match.group(1), int(match.group(2))
        return f"idpa_{backbone}", (
            f"InvertedAttentionCapsNet {backbone}, training step b{batch}, {iterations} iteration"
            + "s" * (iterations != 1)
        )
    raise ValueError(f"side_by_side: no configuration for the harness job {name!r} (batch {batch})")


def before_after_rows(path, before, after):
    """The ``peer-pairs-before-after`` rows of the harness's ``ab_trees.sh`` output in ``path`` (lines ``{"round",
    "tree", "job"}``, the trees ``before`` and ``after`` alternating): per configuration each process's median step,
    in the order run, and their median per tree; a job without a step is left out."""
    found = {}
    with open(path) as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            if record.get("tree") not in (before, after):
                raise ValueError(
                    f"side_by_side: {path} line {number}: tree {record.get('tree')!r} is neither --before {before!r} "
                    f"nor --after {after!r}"
                )
            job = record["job"]
            if job.get("median_ms") is None or job.get("error"):
                continue
            side = "before" if record["tree"] == before else "after"
            found.setdefault(before_after_configuration(job), {"before": [], "after": []})[side].append(
                job["median_ms"]
            )
    rows = []
    for (pair, configuration), sides in found.items():
        row = {"target": "peer-pairs-before-after", "pair": pair, "configuration": configuration}
        for side in ("before", "after"):
            row[f"{side}_ms"] = round(statistics.median(sides[side]), 1) if sides[side] else None
        rows.append(row | {f"{side}_each_ms": [round(v, 1) for v in sides[side]] for side in ("before", "after")})
    return rows


def utc_time(text):
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M")
    except ValueError:
        raise SystemExit(f"side_by_side: a time must be 'YYYY-MM-DD HH:MM' (UTC), got {text!r}") from None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results_jsonl", nargs="?", help="the harness's results.jsonl (run_pair.sh)")
    parser.add_argument("--before-after", default=None, help="ab_trees.sh's output: ours before and after a change")
    parser.add_argument("--before", default=None, help="the tree ab_trees.sh ran as 'before' (its 'tree' field)")
    parser.add_argument("--after", default=None, help="the tree ab_trees.sh ran as 'after'")
    parser.add_argument("--software", required=True, help="both sides' software: versions, the peers' commits")
    parser.add_argument("--measured", required=True, help="what was measured, for the runs page")
    parser.add_argument("--pairs", default=",".join(PAIRS), help=f"the pairs to read (default {','.join(PAIRS)})")
    parser.add_argument("--tag", default=None, help="only the lines of this harness TAG")
    parser.add_argument("--started", default=None, help="UTC 'YYYY-MM-DD HH:MM' (default: the files' latest time)")
    parser.add_argument("--ended", default=None, help="UTC 'YYYY-MM-DD HH:MM' (default: the files' latest time)")
    parser.add_argument("--package-commit", default=None, help="the commit of the package the harness installed")
    parser.add_argument("--results", default=os.path.join(HERE, "results"), help="folder of the run file")
    parser.add_argument("--host-name", default=None, help="the host's name (default: CPU, cores and date)")
    args = parser.parse_args(argv)
    pairs = tuple(p for p in args.pairs.split(",") if p)
    unknown = sorted(set(pairs) - set(PAIRS))
    if unknown:
        parser.error(f"--pairs: unknown pair(s) {unknown}; expected some of {', '.join(PAIRS)}")
    if not args.results_jsonl and not args.before_after:
        parser.error("give the harness's results.jsonl, --before-after FILE, or both")
    if args.before_after and not (args.before and args.after):
        parser.error("--before-after needs --before and --after: the two trees as ab_trees.sh recorded them")
    rows = rows_of(read_results(args.results_jsonl, args.tag, pairs)) if args.results_jsonl else []
    if args.before_after:
        rows += before_after_rows(args.before_after, args.before, args.after)
    if not rows:
        parser.error(f"no line of the pairs {', '.join(pairs)} in {args.results_jsonl or args.before_after}")
    files = [f for f in (args.results_jsonl, args.before_after) if f]
    modified = datetime.datetime.fromtimestamp(max(map(os.path.getmtime, files)), datetime.timezone.utc)
    modified = modified.replace(tzinfo=None, second=0, microsecond=0)
    span = tuple(utc_time(t) if t else modified for t in (args.started, args.ended))
    fields = {"software": args.software}
    if args.package_commit:
        fields["package"] = {"commit": args.package_commit}
    if args.before_after:
        fields["trees"] = {"before": args.before, "after": args.after}
    return write_run("side_by_side", args, span, args.measured, rows, "side-by-side", **fields)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
