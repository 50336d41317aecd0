"""Accuracy under FGSM and PGD of every MNIST and Fashion-MNIST preset, for docs/results.md.

    python tools/results/adversarial.py DATA_DIR [--limit 1000] [--models EffCapsNet/mnist ...] [--slice 1000]
    python tools/results/adversarial.py --table     # rewrites the block of docs/results.md from the records

Each preset is attacked with its own training loss (its recipe's: margin loss for the capsule networks,
cross-entropy for the CNN and GLOM) at epsilon 0.05, 0.1, 0.2 and 0.3 (images in [0, 1]): FGSM, each epsilon
on its own, and PGD with 10 steps of 2.5 epsilon / 10 from a random start (seed 0), cumulative over the
epsilons (``adversarial_accuracy(..., cumulative=True)``: an image counts at an epsilon only if it was
correct clean and PGD failed at that epsilon and every smaller one; each epsilon attacks only the images
still standing, which costs about half the gradients), on the first ``--limit`` test images (default: all).
PGD records written before 2026-12-05 are per epsilon (their ``cumulative`` is false); a sliced run measures
such slices again. Writes docs/results/adversarial/<model>-<preset>-<attack>.json (skipped when present:
resumable per model and attack) with the host, date, commit and wall time. Inference only.

``--slice N`` measures the images N at a time, each slice's record kept in
docs/results/adversarial/slices/<record>/ (skipped when present, so a run that spans machines resumes after
the last slice committed, and a later run with a larger ``--limit`` adds slices to the earlier ones), slice k
with PGD's random start drawn from seed k; the record, rewritten once every slice asked for is there, is
their merge. Slices measured from 2026-12-04 on compute the attacks' gradients with the dynamic and kernel
routers compiled by XLA (``keras_capsules.ops.compile.compiled_inference``), earlier ones without: the same
gradients to float32 rounding; each record's commit says which.

Under ``KERAS_BACKEND=jax`` or ``torch`` the attacks run on that backend's default device (a GPU where there
is one) with float32 products at the highest precision (no TF32), and the records name the device and the
backend. A machine without TensorFlow (an accelerator with JAX or PyTorch alone) measures with ``--slice``,
reading the IDX test files as ``benchmarks/accelerator_check.py`` does; ``--records DIR`` writes the records
elsewhere (to bring them back from such a machine, say).
"""

import argparse
import contextlib
import datetime
import functools
import glob
import json
import os
import subprocess
import sys

from keras_capsules import host, markdown

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RECORDS = os.path.join(ROOT, "docs", "results", "adversarial")
PAGE = os.path.join(ROOT, "docs", "results.md")
BLOCK = "adversarial:table"  # the block of docs/results.md this script writes (keras_capsules.markdown)
ATTACKS = ("fgsm", "pgd")
DATASETS = ("mnist", "fashion_mnist")


def _backend():
    import keras

    return keras.backend.backend()


def _accelerator_check():
    """benchmarks/accelerator_check.py, which knows the devices and precision of JAX and PyTorch without TensorFlow."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from benchmarks import accelerator_check

    return accelerator_check


def _host():
    if _backend() == "tensorflow":
        return f"{host.cpu_name()}, {os.cpu_count()} CPU cores"
    return f"{_accelerator_check().device_description()}, float32 at the highest precision"


def _precision():
    """The highest float32 precision on JAX and PyTorch (TF32 off, as on a CPU); nothing to set on TensorFlow."""
    if _backend() == "tensorflow":
        return contextlib.nullcontext()
    return _accelerator_check().float32_precision("highest")


def _commit():
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    except OSError:  # no git on the machine
        return None
    return done.stdout.strip() or None


def _has_tensorflow():
    try:
        import tensorflow  # noqa: F401
    except ImportError:
        return False
    return True


def _test_images(dataset, limit, data_dir):
    """The first ``limit`` test images and labels: ``keras_capsules.datasets``' where TensorFlow is installed,
    else read from ``DATA_DIR``'s IDX files (an accelerator machine with JAX or PyTorch alone)."""
    if _has_tensorflow():
        from keras_capsules.evaluation.robustness import _load_images

        return _load_images(dataset, "test", limit, data_dir, False)
    data = _accelerator_check().load_test_set(dataset, data_dir)
    if data is None:
        raise SystemExit(f"adversarial: no {dataset} test set (t10k-*-ubyte.gz) under DATA_DIR {data_dir!r}")
    return data[0][:limit], data[1][:limit]


def presets_on(datasets=DATASETS):
    """``MODEL/NAME`` of every preset trained on one of ``datasets``, in registry order."""
    from keras_capsules import presets

    return [key for key in presets.available() if presets.get(*presets.find(key)).dataset in datasets]


def _write(path, record):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".part", "w") as handle:
        json.dump(record, handle, indent=2)
    os.replace(path + ".part", path)


def _stamped(result, command):
    """``result``'s record with the host, date, commit and command that made it."""
    return {
        **result.to_dict(),
        "host": _host(),
        "date": datetime.date.today().isoformat(),
        "commit": _commit(),
        "command": command,
    }


def measure(data_dir, models, limit, batch_size, loss=None, slice_size=None):
    """Writes the records of ``models`` not written yet; ``loss``: ``None`` (each one's training loss) or a name;
    ``slice_size``: measure that many images at a time, each slice's record kept (see the module docstring)."""
    from keras_capsules import presets
    from keras_capsules.cli.robustness import training_loss
    from keras_capsules.evaluation.adversarial_accuracy import EPSILONS, report

    for key in models:
        dataset = presets.get(*presets.find(key)).dataset
        attacked, source = training_loss(key) if loss is None else (loss, "argument")
        # one model for both attacks and every slice: its traced gradient is reused (evaluation.adversarial)
        model = functools.cache(lambda key=key: presets.open_model(key)[0])
        for attack in ATTACKS:
            suffix = "" if loss is None else f"-{loss}"
            stem = f"{key.lower().replace('/', '-')}-{attack}{suffix}"
            path = os.path.join(RECORDS, stem + ".json")
            options = (f" --limit {limit}" if limit else "") + ("" if loss is None else f" --loss {loss}")
            options += f" --slice {slice_size}" if slice_size else ""
            backend = "" if _backend() == "tensorflow" else f"KERAS_BACKEND={_backend()} "
            command = f"{backend}python tools/results/adversarial.py DATA_DIR{options} --models {key}"
            if slice_size:  # the slices already measured are kept; the record is their merge, written again
                print(
                    datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), key, attack, flush=True
                )
                slices = _measure_slices(
                    key,
                    dataset,
                    attack,
                    stem,
                    attacked,
                    source,
                    data_dir,
                    limit,
                    batch_size,
                    slice_size,
                    command,
                    model,
                )
                _write(path, {**merge_slices(slices), "command": command})
                continue
            if os.path.exists(path) and _read(path).get("cumulative", False) == (attack == "pgd"):
                print("have", path, flush=True)
                continue
            print(datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), key, attack, flush=True)
            result = report(
                key,
                dataset,
                "test",
                attack,
                EPSILONS,
                limit=limit,
                data_dir=data_dir,
                loss=attacked,
                loss_source=source,
                batch_size=batch_size,
                cumulative=attack == "pgd",
            )
            _write(path, _stamped(result, command))


def _measure_slices(
    key, dataset, attack, stem, loss, source, data_dir, limit, batch_size, slice_size, command, model=None
):
    """The records of ``stem``'s slices, each measured unless its file is there; returns them in order.

    ``model()`` gives the model to attack (opened once for every slice), named ``key`` in the records; without it,
    ``key`` is attacked (a preset name or a model)."""
    import dataclasses

    from keras_capsules.evaluation.adversarial_accuracy import EPSILONS, adversarial_accuracy

    images, labels = _test_images(dataset, limit, data_dir)
    records = []
    for index, start in enumerate(range(0, len(images), slice_size)):
        end = min(start + slice_size, len(images))
        path = os.path.join(RECORDS, "slices", stem, f"{start:06d}-{end:06d}.json")
        if not os.path.exists(path) or _read(path).get("cumulative", False) != (attack == "pgd"):
            print(f"  images {start}-{end}", flush=True)
            result = adversarial_accuracy(
                key if model is None else model(),
                images[start:end],
                labels[start:end],
                attack,
                EPSILONS,
                loss=loss,
                batch_size=batch_size,
                seed=index,
                cumulative=attack == "pgd",
            )
            named = {} if model is None else {"model": key}
            result = dataclasses.replace(result, dataset=dataset, split="test", loss_source=source, **named)
            _write(path, {**_stamped(result, command), "images": [start, end]})
        records.append(_read(path))
    return records


def _read(path):
    with open(path) as handle:
        return json.load(handle)


def merge_slices(slices):
    """One record from the records of consecutive slices of a test set: accuracies and zero-gradient shares
    weighted by each slice's images, times summed, the seeds, hosts, dates and commits listed, and each slice's
    ``note`` kept, named by its images."""
    first, total = slices[0], sum(s["examples"] for s in slices)
    if [s["images"][0] for s in slices] != [0] + [s["images"][1] for s in slices[:-1]]:
        raise ValueError(f"adversarial: slices are not consecutive from image 0: {[s['images'] for s in slices]}")
    if len({s.get("cumulative", False) for s in slices}) > 1:
        raise ValueError("adversarial: slices measured cumulative over the epsilons and per epsilon do not merge")

    def mean(values):
        return sum(v * s["examples"] for v, s in zip(values, slices)) / total

    epsilons = [e for e, _ in first["table"]]
    distinct = lambda field: "; ".join(dict.fromkeys(str(s[field]) for s in slices))  # noqa: E731
    notes = [f"images {s['images'][0]}-{s['images'][1]}: {s['note']}" for s in slices if s.get("note")]
    return {
        **{k: v for k, v in first.items() if k not in ("images", "paused_seconds", "note")},
        "cumulative": first.get("cumulative", False),
        "examples": total,
        "accuracy": mean([s["accuracy"] for s in slices]),
        "table": [[e, mean([s["table"][i][1] for s in slices])] for i, e in enumerate(epsilons)],
        "zero_gradient": [mean([s["zero_gradient"][i] for s in slices]) for i in range(len(epsilons))],
        "seed": [s["seed"] for s in slices],
        "seconds": round(sum(s["seconds"] for s in slices), 2),
        "paused_seconds": sum(s.get("paused_seconds", 0) for s in slices),
        "slices": [s["images"] for s in slices],
        "host": distinct("host"),
        "date": distinct("date"),
        "commit": distinct("commit"),
        **({"note": "; ".join(notes)} if notes else {}),
    }


def table():
    """The Markdown block of docs/results.md, from the records."""
    records = {}
    for path in sorted(glob.glob(os.path.join(RECORDS, "*.json"))):
        with open(path) as handle:
            record = json.load(handle)
        # a row per model and loss: its training loss first, then any loss passed with --loss
        records.setdefault((record["model"], record["loss_source"] == "argument"), {})[record["attack"]] = record
    records = dict(sorted(records.items()))
    if not records:
        raise SystemExit(f"adversarial: no records in {RECORDS}; run the measurement first")
    examples = {r["examples"] for pair in records.values() for r in pair.values()}
    epsilons = [e for e, _ in next(iter(next(iter(records.values())).values()))["table"]]
    lines = []
    for dataset in DATASETS:
        rows = {k: v for k, v in records.items() if next(iter(v.values()))["dataset"] == dataset}
        if not rows:
            continue
        heads = [f"FGSM {e:g}" for e in epsilons] + [f"PGD {e:g}" for e in epsilons]
        body = []
        for key, pair in rows.items():
            fgsm, pgd = pair.get("fgsm"), pair.get("pgd")
            first = fgsm or pgd
            cells = [f"{100 * a:.1f}" for _, a in fgsm["table"]] if fgsm else ["—"] * len(epsilons)
            cells += [f"{100 * a:.1f}" for _, a in pgd["table"]] if pgd else ["—"] * len(epsilons)
            stuck = f"{100 * fgsm['zero_gradient'][0]:.1f}" if fgsm else "—"
            loss = f"{first['loss']}{' (--loss)' if key[1] else ''}"
            # while a model is being measured on more images, its two attacks can stand on different counts
            counts = " / ".join(dict.fromkeys(f"{r['examples']:,d}" if r else "—" for r in (fgsm, pgd)))
            body.append([f"`{key[0]}`", loss, counts, f"{100 * first['accuracy']:.1f}", *cells, stuck])
        title = dataset.replace("_", "-").replace("mnist", "MNIST").replace("fashion", "Fashion")
        headers = ["model", "loss attacked", "images", "clean", *heads, "zero gradient (FGSM)"]
        lines += [
            "",
            f"{title}, accuracy (%):",
            "",
            *markdown.table(headers, body, align="ll" + "r" * (len(heads) + 3)),
        ]
    seconds = {
        f"{k[0]} {a}" + (f" {r['loss']}" if k[1] else ""): r["seconds"] - r.get("paused_seconds", 0)
        for k, pair in records.items()
        for a, r in pair.items()
    }
    split = (
        "; where the column has two counts, the first is FGSM's images (and the clean accuracy's), the second PGD's"
        if any(len({r["examples"] for r in pair.values()}) > 1 for pair in records.values())
        else ""
    )
    hosts = sorted({r["host"] for pair in records.values() for r in pair.values()})
    pgd_rows = [(k, pair["pgd"].get("cumulative", False)) for k, pair in records.items() if "pgd" in pair]
    per_epsilon = [f"`{k[0]}`{' (--loss)' if k[1] else ''}" for k, summed in pgd_rows if not summed]
    cumulative = (
        "PGD columns: cumulative over the epsilons, an image counted at an epsilon only if it was correct clean and "
        "PGD failed at that epsilon and every smaller one (each epsilon attacks only the images still standing)"
    )
    if not per_epsilon:
        columns = f"FGSM columns: each epsilon on its own. {cumulative}. "
    elif len(per_epsilon) == len(pgd_rows):
        columns = "FGSM and PGD columns: each epsilon on its own. "
    else:
        columns = (
            f"FGSM columns: each epsilon on its own. {cumulative}; except the rows of {', '.join(per_epsilon)}, "
            "measured earlier with each epsilon on its own. "
        )
    lines += [
        "",
        columns
        + f"Images (column `images`): the first {' or '.join(f'{n:,d}' for n in sorted(examples))} of the test set "
        f"(10,000: the whole set){split}. "
        f"Wall time per model and attack, pauses for other jobs' benchmarks subtracted (s): {', '.join(f'{k} {v:,.0f}' for k, v in seconds.items())}; "
        f"on {'; '.join(hosts)}, shared with other jobs.",
        "",
    ]
    return "\n".join(lines)


def write_table():
    with open(PAGE, encoding="utf-8") as handle:
        page = handle.read()
    page = markdown.replace_block(page, BLOCK, table(), "docs/results.md")
    with open(PAGE, "w", encoding="utf-8") as handle:
        handle.write(page)
    print("rewrote the table of", PAGE)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", help="folder with the MNIST and Fashion-MNIST files")
    parser.add_argument("--limit", type=int, help="the first LIMIT test images only (default: all)")
    parser.add_argument("--models", nargs="+", help="presets (default: every MNIST and Fashion-MNIST preset)")
    parser.add_argument(
        "--batch-size",
        type=int,
        help="images per gradient call (default: planned, the largest up to 256 that fits in the memory available)",
    )
    parser.add_argument(
        "--loss", choices=("margin", "cross_entropy"), help="attack this loss (default: each model's training loss)"
    )
    parser.add_argument(
        "--slice",
        type=int,
        dest="slice_size",
        help="measure SLICE images at a time, each slice's record kept (resumable)",
    )
    parser.add_argument("--records", help="write the records to RECORDS (default: docs/results/adversarial)")
    parser.add_argument("--table", action="store_true", help="only rewrite the docs/results.md block from the records")
    args = parser.parse_args(argv)
    if args.records:
        global RECORDS
        RECORDS = os.path.abspath(args.records)
    if args.table:
        return write_table()
    if args.data_dir is None:
        parser.error("DATA_DIR is required to measure")
    if args.slice_size is None and not _has_tensorflow():
        parser.error("without TensorFlow the test sets are read only by --slice: add --slice N")
    with _precision():
        measure(args.data_dir, args.models or presets_on(), args.limit, args.batch_size, args.loss, args.slice_size)
    if args.records:  # records elsewhere: the docs' table stays as it is
        print(table())
        return 0
    return write_table()


if __name__ == "__main__":
    sys.exit(main())
