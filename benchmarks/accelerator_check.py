"""End-to-end checks on an accelerator under the JAX or the PyTorch backend, needing no TensorFlow.

    KERAS_BACKEND=jax|torch python -m benchmarks accelerator_check [--output FILE] [--data-dir DIR] [--quick] [--checks preset,fit,...]

It prints one line per check and writes them all, as each ends, to ``--output`` (JSON; by default
``benchmarks/results/accelerator_check.json``, not committed: what an interrupted run keeps). At the end a
full run (not ``--quick``) writes its run file, ``benchmarks/results/YYYY-MM-DD-HHMM-<host>-accelerator-check.json``
(:func:`benchmarks.runs.write_run`, the host named after the devices unless ``--host-name``; rows of
:func:`rows_of`). Nothing here asserts: the lines say what was measured, and ``ok`` marks a check that met
its stated expectation.

1. ``preset``: each preset whose test set is at hand, loaded through ``weights=`` and evaluated on the
   full 10,000-image test set on the default device, against the accuracy its registry records (measured
   on a CPU with TensorFlow). Once with the backend's default float32 precision (JAX: TF32 matrix products
   on NVIDIA Ampere and later GPUs; PyTorch: full float32 products, TF32 convolutions) and once with the
   highest (no TF32 anywhere); ``ok`` iff the highest-precision run is within 5 images.
   MNIST presets use the embedded sample (the MNIST test set); Fashion-MNIST ones need
   ``DATA_DIR/fashion-mnist/t10k-*``.
2. ``fit``: EffCapsNet (MNIST recipe, with decoder), CapsNet (3 routing iterations, with decoder) and
   FMCapsNet (the FM-agreement network of Zhao, Wang & Huang) trained from scratch on the embedded sample's first 8,000 images under
   ``float32``, ``mixed_float16`` and ``mixed_bfloat16``, evaluated on the other 2,000. ``ok`` iff
   every epoch's loss is finite and the held-out accuracy is at least 90 %. ``step_ms``: median
   training step after the first epoch (tracing and compilation excluded), batch size of the recipe.
3. ``data_parallel`` (JAX only: Keras distributes on no other backend): the EffCapsNet fit again under
   ``keras.distribution.DataParallel`` over every device JAX sees (on a one-GPU machine this is one replica:
   it checks the code path, not scaling).
4. ``consensus_step``: one training step of ``ConsensusCapsNet(input_shape=(28, 28, 1), classes=10,
   router=...)`` per paper router (dynamic, EM, kernel, LSTM) at batch 64, as
   ``benchmarks/training_step_cost.py --time`` measures it on a CPU (Adam, the library's loss per
   router, random data; median step after the warm-up steps), with the hours an MNIST epoch
   (938 steps) would take. Timings only: no ``ok``.

5. ``tests``: the README's test selection for the backend (read from its test command), run with pytest on this
   machine (every core where pytest-xdist is installed); its outcome and the failed tests' ids.

``--checks`` runs a subset, e.g. ``--checks consensus_step`` for the step times alone. ``--from-records FILE``
writes the run file of an interrupted run from the records it kept (``--output``), naming the checks it holds.
"""

import argparse
import contextlib
import datetime
import gzip
import importlib.util
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time

import keras
import numpy as np

import keras_capsules  # noqa: E402
from benchmarks.common import backend_framework  # noqa: E402
from benchmarks.runs import HERE, package_record, utc_now, write_run  # noqa: E402
from benchmarks.training_step_cost import ROUTERS as CONSENSUS_ROUTERS  # noqa: E402
from benchmarks.training_step_cost import measure_step_seconds, training_loss  # noqa: E402
from keras_capsules import applications, presets, recipes  # noqa: E402

#: The embedded sample (the MNIST test set). ``keras_capsules.datasets`` imports TensorFlow, so its
#: reader is not used here; the official files need only the fixed IDX headers skipped.
SAMPLE_DIR = os.path.join(os.path.dirname(keras_capsules.__file__), "datasets", "sample")
SAMPLE_TRAIN_SIZE = 8000

CHECKS = ("preset", "fit", "data_parallel", "consensus_step", "tests")
BACKENDS = ("jax", "torch")
#: The checks a backend cannot run, and why.
UNSUPPORTED = {"torch": {"data_parallel": "keras.distribution supports the JAX backend only"}}
POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
MNIST_TRAINING_IMAGES = 60_000
#: (model, dataset, recipe variant) of the training check; the sample stands in for each recipe's data.
FIT_RECIPES = (
    ("EffCapsNet", "mnist_sample", "default"),
    ("CapsNet", "mnist_sample", "default"),
    ("FMCapsNet", "fashion_mnist", "light"),
)


def devices():
    """``(number of devices, their kind)`` of the backend's default accelerator (the CPU where none)."""
    if keras.backend.backend() == "torch":
        import torch

        if torch.cuda.is_available():
            return torch.cuda.device_count(), torch.cuda.get_device_name(0)
        return 1, "cpu"
    import jax

    found = jax.devices()
    return len(found), found[0].device_kind


def device_description():
    count, kind = devices()
    return f"{count} x {kind}, {backend_framework()}, Keras {keras.__version__}, Python {platform.python_version()}"


@contextlib.contextmanager
def float32_precision(precision):
    """The backend's ``"default"`` float32 precision, or its ``"highest"`` (no TF32 in matrix products or
    convolutions), while the block runs."""
    if keras.backend.backend() == "jax":
        import jax

        with jax.default_matmul_precision(None if precision == "default" else "highest"):
            yield
        return
    import torch

    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    if precision == "highest":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def load_test_set(dataset, data_dir):
    """``(images float32 (10000, 28, 28, 1) in [0, 1], labels int (10000,))``, or ``None`` if absent."""
    if dataset == "mnist_sample":
        folder = SAMPLE_DIR
    else:
        folder = os.path.join(data_dir or "", {"fashion_mnist": "fashion-mnist"}.get(dataset, dataset))
    images_path = os.path.join(folder, "t10k-images-idx3-ubyte.gz")
    if not os.path.isfile(images_path):
        return None
    with gzip.open(images_path) as handle:
        images = np.frombuffer(handle.read(), np.uint8, offset=16).reshape(-1, 28, 28, 1).astype("float32") / 255.0
    with gzip.open(os.path.join(folder, "t10k-labels-idx1-ubyte.gz")) as handle:
        labels = np.frombuffer(handle.read(), np.uint8, offset=8).astype("int64")
    return images, labels


def count_correct(model, images, labels, batch_size=500):
    predictions = [
        np.argmax(np.asarray(model.predict_on_batch(images[i : i + batch_size])), axis=-1)
        for i in range(0, len(images), batch_size)
    ]
    return int(np.sum(np.concatenate(predictions) == labels))


def check_presets(data_dir, report, limit=None):
    """Records each preset's full-test-set count; ``limit`` (a smoke run) evaluates only that many images."""
    for key in presets.available():
        model_name, name = key.split("/", 1)
        preset = presets.get(model_name, name)
        data = load_test_set(preset.subset["dataset"], data_dir)
        if data is None:
            report({"check": "preset", "preset": key, "skipped": "test set absent"})
            continue
        if limit:
            data = (data[0][:limit], data[1][:limit])
        recorded = round(preset.test_accuracy * len(data[1]))
        counts = {}
        try:
            model = getattr(applications, model_name)(weights=name)
            for precision in ("default", "highest"):
                with float32_precision(precision):
                    start = time.perf_counter()
                    counts[precision] = count_correct(model, *data)
                    seconds = time.perf_counter() - start
        except Exception as error:  # recorded, and the other presets still checked
            report(failure("preset", key, error))
            continue
        report(
            {
                "check": "preset",
                "preset": key,
                "recorded_correct": recorded,
                "correct_default_precision": counts["default"],
                "correct_highest_precision": counts["highest"],
                "images": len(data[1]),
                "seconds_highest": round(seconds, 2),
                "ok": None if limit else abs(counts["highest"] - recorded) <= 5,
            }
        )


def failure(check, subject, error):
    """The record of a check that raised ``error`` on ``subject`` (a preset, model or router): its type and
    first line."""
    message = str(error).strip().splitlines()
    return {"check": check, "subject": subject, "error": f"{type(error).__name__}: {message[0] if message else ''}"}


class StepTimer(keras.callbacks.Callback):
    """Wall-clock seconds of every training step, per epoch."""

    def __init__(self):
        super().__init__()
        self.epochs = []

    def on_epoch_begin(self, epoch, logs=None):
        self.epochs.append([])

    def on_train_batch_begin(self, batch, logs=None):
        self._start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.epochs[-1].append(time.perf_counter() - self._start)


def fit_and_evaluate(model_name, dataset, variant, policy, epochs, train, held_out):
    """Builds the recipe's model under ``policy``, fits ``epochs`` epochs and evaluates; returns the record."""
    recipe = recipes.get(model_name, dataset, variant)
    keras.utils.set_random_seed(0)
    keras.config.set_dtype_policy(policy)
    try:
        model = getattr(applications, model_name)(**{**recipe.model_kwargs, "classes": 10, "input_shape": (28, 28, 1)})
        steps = int(np.ceil(len(train[0]) / recipe.batch_size))
        model.compile(optimizer=recipe.make_optimizer(steps), loss=recipe.make_loss(), metrics=recipe.make_metrics())
        timer = StepTimer()
        history = model.fit(*train, batch_size=recipe.batch_size, epochs=epochs, verbose=0, callbacks=[timer])
        correct = count_correct(model, *held_out)
    finally:
        keras.config.set_dtype_policy("float32")
    losses = [float(v) for v in history.history["loss"]]
    accuracy = correct / len(held_out[1])
    later_steps = [t for epoch in timer.epochs[1:] for t in epoch] or timer.epochs[0]
    return {
        "model": model_name,
        "recipe": f"{dataset}/{variant}",
        "policy": policy,
        "batch_size": recipe.batch_size,
        "epochs": epochs,
        "losses": [round(v, 5) for v in losses],
        "held_out_accuracy": accuracy,
        "step_ms": round(1000 * statistics.median(later_steps), 2),
        "first_epoch_s": round(sum(timer.epochs[0]), 1),
        "ok": bool(np.all(np.isfinite(losses)) and accuracy >= 0.90),
    }


def readme_tests(backend):
    """The pytest arguments of the README's test selection for ``backend`` (its test command's
    ``KERAS_BACKEND=<backend> python -m pytest`` run), without the worker count."""
    readme = open(os.path.join(os.path.dirname(HERE), "README.md"), encoding="utf-8").read()
    match = re.search(rf"KERAS_BACKEND={backend} python -m pytest (.*?)(?: &&|\n)", readme)
    if match is None:
        raise ValueError(
            f"accelerator_check: README.md's test command has no 'KERAS_BACKEND={backend} python -m pytest' run"
        )
    arguments = shlex.split(match.group(1))
    if "-n" in arguments:
        del arguments[arguments.index("-n") : arguments.index("-n") + 2]
    return arguments


def pytest_outcome(output):
    """pytest's closing line (``"460 passed, 1 failed in 80.2s"``, the time left out) and the failed tests' ids
    from ``output``, its ``-q -rf`` text."""
    lines = output.strip().splitlines()
    summary = next((line.strip("= ") for line in reversed(lines) if re.search(r"\d+ (passed|failed)", line)), None)
    if summary is None:
        return "no pytest summary: " + (lines[-1] if lines else "no output")
    summary = re.sub(r" in [\d.]+s.*$", "", summary)
    failed = [line.split()[1] for line in lines if line.startswith("FAILED ")]
    return summary + (": " + ", ".join(failed) if failed else "")


def check_tests(report):
    """Runs the README's test selection for this backend on this machine (its own process, every core) and records
    the outcome."""
    backend = keras.backend.backend()
    command = [sys.executable, "-m", "pytest", *readme_tests(backend), "-rf", "-p", "no:cacheprovider"]
    if importlib.util.find_spec("xdist") is not None:
        command += ["-n", str(os.cpu_count() or 1)]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=os.path.dirname(HERE), env={**os.environ, "KERAS_BACKEND": backend}
    )
    name = backend_framework().split()[0]
    report(
        {"check": "tests", "selection": f"the README's {name} test selection", "result": pytest_outcome(done.stdout)}
    )


def check_consensus_steps(report, batch_size, steps, warmup, routers=CONSENSUS_ROUTERS):
    """Records the median training step of ConsensusCapsNet on MNIST-sized input, per paper router."""
    epoch_steps = -(-MNIST_TRAINING_IMAGES // batch_size)
    for router in routers:
        keras.utils.set_random_seed(0)
        try:
            model = applications.ConsensusCapsNet(input_shape=(28, 28, 1), classes=10, router=router)
            seconds = measure_step_seconds(model, training_loss(router), batch_size, steps=steps, warmup=warmup)
        except Exception as error:  # recorded, and the other routers still timed
            report(failure("consensus_step", f"ConsensusCapsNet router={router}", error))
            continue
        report(
            {
                "check": "consensus_step",
                "model": "ConsensusCapsNet",
                "router": router,
                "batch_size": batch_size,
                "steps_timed": steps,
                "step_s": round(seconds, 4),
                "hours_per_mnist_epoch": round(seconds * epoch_steps / 3600, 3),
            }
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--output",
        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "accelerator_check.json"),
        help="JSON file for the records",
    )
    parser.add_argument(
        "--data-dir", default=os.environ.get("KERAS_CAPSULES_DATA"), help="folder holding fashion-mnist/t10k-*"
    )
    parser.add_argument("--epochs", type=int, default=3, help="training epochs per model and policy")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: 512 images per preset and for training, 1 epoch, float32 only; ConsensusCapsNet steps at batch 8, 2 timed",
    )
    parser.add_argument("--checks", default=",".join(CHECKS), help=f"comma-separated subset of {', '.join(CHECKS)}")
    parser.add_argument(
        "--routers",
        default=",".join(CONSENSUS_ROUTERS),
        help=f"consensus_step's routers, comma-separated (default: {','.join(CONSENSUS_ROUTERS)})",
    )
    parser.add_argument("--results", default=os.path.join(HERE, "results"), help="folder of the run file")
    parser.add_argument("--host-name", default=None, help="the host's name (default: the devices and the date)")
    parser.add_argument(
        "--from-records",
        nargs="+",
        metavar="FILE",
        help="write the run file of an interrupted run from the records files it kept (--output) and stop",
    )
    args = parser.parse_args()
    if args.from_records:
        write_from_records(args, args.from_records)
        return
    started = utc_now()
    checks = args.checks.split(",")
    unknown = sorted(set(checks) - set(CHECKS))
    if unknown:
        parser.error(f"--checks: unknown {', '.join(unknown)}; expected some of {', '.join(CHECKS)}")
    backend = keras.backend.backend()
    if backend not in BACKENDS:
        parser.error(f"needs KERAS_BACKEND={' or '.join(BACKENDS)} (the backend is {backend!r})")
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    records = []

    def report(record):
        records.append(record)
        print(json.dumps(record), flush=True)
        kept = {
            "device": device_description(),
            "package": package_record(),
            "started": f"{started:%Y-%m-%dT%H:%M}",
            "updated": f"{utc_now():%Y-%m-%dT%H:%M}",
        }
        with open(args.output, "w") as handle:
            json.dump({**kept, "records": records}, handle, indent=1)

    print(device_description(), flush=True)
    for check, reason in UNSUPPORTED.get(backend, {}).items():
        if check in checks:
            checks.remove(check)
            report({"check": check, "skipped": reason})
    if "preset" in checks:
        check_presets(args.data_dir, report, limit=512 if args.quick else None)
    if {"fit", "data_parallel"} & set(checks):  # both train on the embedded sample
        images, labels = load_test_set("mnist_sample", None)
        size = 512 if args.quick else SAMPLE_TRAIN_SIZE
        train, held_out = (images[:size], labels[:size]), (images[SAMPLE_TRAIN_SIZE:], labels[SAMPLE_TRAIN_SIZE:])
        epochs = 1 if args.quick else args.epochs
    if "fit" in checks:
        for model_name, dataset, variant in FIT_RECIPES:
            for policy in POLICIES[:1] if args.quick else POLICIES:
                try:
                    record = fit_and_evaluate(model_name, dataset, variant, policy, epochs, train, held_out)
                except Exception as error:  # recorded, and the other fits still run
                    report(failure("fit", f"{model_name} {dataset}/{variant} {policy}", error))
                    continue
                report({"check": "fit", **record})
    if "data_parallel" in checks:
        import jax

        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=jax.devices()))
        try:
            record = fit_and_evaluate("EffCapsNet", "mnist_sample", "default", "float32", epochs, train, held_out)
        finally:
            keras.distribution.set_distribution(None)
        report({"check": "data_parallel", "replicas": len(jax.devices()), **record})
    if "consensus_step" in checks:
        check_consensus_steps(
            report,
            batch_size=8 if args.quick else 64,
            steps=2 if args.quick else 10,
            warmup=1 if args.quick else 3,
            routers=args.routers.split(","),
        )
    if "tests" in checks:
        check_tests(report)
    if not args.quick:
        write(args, (started, utc_now()), records, checks, device_description())


def write_from_records(args, paths):
    """The run file of an interrupted run (stopped at its time limit, say) from the records files it kept
    (``--output``), on any machine: their device, their records in order, the span from their times (a file
    without them: its modification time), the package they name (else this one)."""
    kept = [json.load(open(path)) for path in paths]
    device = {k["device"] for k in kept}
    if len(device) != 1:
        raise SystemExit(f"accelerator_check: --from-records: the files come from different devices: {sorted(device)}")
    records = [record for k in kept for record in k["records"]]
    checks = list(dict.fromkeys(r["check"] for r in records if "skipped" not in r))

    def time_of(k, path, field):
        if field in k:
            return datetime.datetime.strptime(k[field], "%Y-%m-%dT%H:%M")
        return datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc).replace(tzinfo=None)

    span = (
        min(time_of(k, path, "started") for k, path in zip(kept, paths)),
        max(time_of(k, path, "updated") for k, path in zip(kept, paths)),
    )
    packages = [k["package"] for k in kept if "package" in k]
    package = {"package": packages[0]} if packages and all(p == packages[0] for p in packages) else {}
    return write(args, span, records, checks, device.pop(), interrupted=True, **package)


def rows_of(records):
    """The run file's rows of the check records: ``gpu-presets`` (correct images: the registry's, the backend's
    default precision's, the highest's; seconds), ``gpu-mixed-precision`` (one per model and policy: step, held-out
    accuracy, losses per epoch), ``gpu-consensus-step`` and ``gpu-checks`` (the tests' outcome, and each check that
    raised, with its error); a skipped check (a preset whose test set was absent, a check the backend cannot run)
    has no row."""
    rows = []
    for record in records:
        if "skipped" in record:
            continue
        if "error" in record:
            rows.append(
                {"target": "gpu-checks", "check": f"{record['check']} {record['subject']}", "result": record["error"]}
            )
        elif record["check"] == "preset":
            model, name = record["preset"].split("/", 1)
            rows.append(
                {
                    "target": "gpu-presets",
                    "preset": f'{model}(weights="{name}")',
                    "registry": record["recorded_correct"],
                    "tf32": record["correct_default_precision"],
                    "highest": record["correct_highest_precision"],
                    "seconds": record["seconds_highest"],
                }
            )
        elif record["check"] in ("fit", "data_parallel"):
            model = f"{record['model']} {record['recipe']} (b{record['batch_size']})"
            if record["check"] == "data_parallel":
                replicas = record["replicas"]
                model += f" under keras.distribution.DataParallel ({replicas} replica{'s' * (replicas != 1)})"
            rows.append(
                {
                    "target": "gpu-mixed-precision",
                    "model": model,
                    "policy": record["policy"],
                    "step_ms": record["step_ms"],
                    "accuracy_pct": round(100 * record["held_out_accuracy"], 2),
                    "losses": ", ".join(f"{v:.4f}" for v in record["losses"]),
                }
            )
        elif record["check"] == "tests":
            rows.append({"target": "gpu-checks", "check": record["selection"], "result": record["result"]})
        elif record["check"] == "consensus_step":
            keys = ("router", "batch_size", "step_s", "hours_per_mnist_epoch")
            rows.append({"target": "gpu-consensus-step", **{key: record[key] for key in keys}})
    return rows


def write(args, span, records, checks, device, interrupted=False, **fields):
    """The run file of ``records`` (:func:`rows_of`; under ``skipped``, the presets skipped for want of a test set
    and the checks the backend cannot run, with the reason) measured on ``device`` (:func:`device_description`'s
    line), with ``fields`` (e.g. the ``package`` an interrupted run kept); its path."""
    count, kind = device.split(",")[0].split(" x ", 1)
    framework = device.split(", ")[1]
    args.host_name = args.host_name or f"{count} x {kind} ({span[0]:%Y-%m-%d}), {framework.split()[0]}"
    parts = {
        "preset": "the presets on their full test sets at the backend's default float32 precision and at the highest",
        "fit": f"{args.epochs} epochs from scratch per model and dtype policy on the embedded sample's first 8,000 "
        "images, the step the median after the first epoch, the accuracy on the other 2,000",
        "data_parallel": "the EffCapsNet fit again under keras.distribution.DataParallel over every device",
        "consensus_step": "ConsensusCapsNet's training step per router at batch 64, the median of 10 after 3",
        "tests": "the README's test selection for the backend run with pytest on this machine",
    }
    measured = f"on {device}: " + "; ".join(parts[check] for check in checks)
    if interrupted:
        measured += " (the run stopped at its time limit: the checks it finished, written from its records)"
    skipped = [r.get("preset") or f"{r['check']}: {r['skipped']}" for r in records if "skipped" in r]
    return write_run(
        "accelerator_check",
        args,
        span,
        measured,
        rows_of(records),
        "accelerator-check",
        accelerator=kind,
        software=device if interrupted else None,
        skipped=skipped,
        **fields,
    )


if __name__ == "__main__":
    main()
