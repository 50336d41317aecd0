"""Inference latency of the exported applications: SavedModel (TensorFlow), ONNX Runtime and LiteRT, batch 1 and 64.

Each registered application configuration (random weights: latency does not depend on them) is
exported once to the three formats with ``keras_capsules.export.export_model``; then every
(model, runtime) pair is timed in its own fresh process that does not import ``keras_capsules``:
the median wall time of ``--repeats`` calls after ``--warmup`` calls, per batch size. LiteRT and
ONNX Runtime use every core (``num_threads`` / their default), like TensorFlow.

Writes ``<results>/YYYY-MM-DD-HHMM-<host>-export-latency.json`` (rows of target ``"export"`` for
``benchmarks/report.py``, one per configuration: ``configuration`` and ``savedmodel_b<batch>``,
``onnx_b<batch>``, ``litert_b<batch>`` in ms; a runtime whose process failed has ``<format>_error``
instead of its figures, shown as dashes) and, for the repository's own results folder, regenerates
BENCHMARKS.md. The export target reads ``EffCapsNet/mnist``'s batch-1 figures (the fastest format that
ran); a run without them gives that target no verdict. Time only on an otherwise idle machine.

Usage::

    python -m benchmarks export_latency [--models EffCapsNet/mnist,CapsNet/mnist] [--batches 1,64]
                                        [--repeats 50] [--warmup 5]
"""

import datetime
import json
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.runs import child_row, run_parser, write_run  # noqa: E402

RUNTIMES = ("savedmodel", "onnxruntime", "litert")
FILES = {"savedmodel": "savedmodel", "onnxruntime": "model.onnx", "litert": "model.tflite"}
FORMATS = {"savedmodel": "savedmodel", "onnxruntime": "onnx", "litert": "litert"}
DEFAULTS = dict(batches="1,64", repeats=50, warmup=5)

#: Runs in the child process: times one runtime on one exported model. No keras_capsules import.
CHILD = """
import json, os, statistics, sys, time
import numpy as np

runtime, path, shape, batches, repeats, warmup = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
if runtime == "savedmodel":
    import tensorflow as tf
    loaded = tf.saved_model.load(path)  # keep a reference: its variables die with it
    def predictor(batch):
        x = tf.constant(np.random.default_rng(0).uniform(size=(batch,) + tuple(shape)).astype("float32"))
        return lambda: loaded.serve(x).numpy()
elif runtime == "onnxruntime":
    import onnxruntime
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    def predictor(batch):
        x = np.random.default_rng(0).uniform(size=(batch,) + tuple(shape)).astype("float32")
        return lambda: session.run(None, {name: x})[0]
else:
    from ai_edge_litert.interpreter import Interpreter
    def predictor(batch):
        interpreter = Interpreter(model_path=path, num_threads=os.cpu_count())
        entry = interpreter.get_input_details()[0]
        interpreter.resize_tensor_input(entry["index"], (batch,) + tuple(shape))
        interpreter.allocate_tensors()
        interpreter.set_tensor(entry["index"], np.random.default_rng(0).uniform(size=(batch,) + tuple(shape)).astype("float32"))
        output = interpreter.get_output_details()[0]["index"]
        def run():
            interpreter.invoke()
            return interpreter.get_tensor(output)
        return run
result = {"loaded_keras_capsules": any(m.startswith("keras_capsules") for m in sys.modules)}
for batch in batches:
    run = predictor(batch)
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    result[str(batch)] = 1e3 * statistics.median(times)
print("ROW " + json.dumps(result))
"""


def export_all(name, folder):
    """Builds configuration ``name`` and exports it to every format under ``folder``; returns its input shape."""
    from keras_capsules import applications
    from keras_capsules.export import export_model

    model = applications.get_configuration(name).build()
    inputs = model.inputs if getattr(model, "inputs", None) else model.encoder.inputs
    for runtime in RUNTIMES:
        export_model(model, os.path.join(folder, FILES[runtime]), format=FORMATS[runtime])
    return [int(d) for d in inputs[0].shape[1:]]


def time_runtime(runtime, path, shape, batches, repeats, warmup):
    command = [
        sys.executable,
        "-c",
        CHILD,
        runtime,
        path,
        json.dumps(shape),
        json.dumps(batches),
        str(repeats),
        str(warmup),
    ]
    return child_row(command, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))


def rows_of(found, batches):
    """``[{"model", runtime: {str(batch): ms} or {"error": ...}}]`` -> the run file's rows: per configuration its
    ``<format>_b<batch>`` figures, ms, or ``<format>_error`` where that runtime's process failed."""
    rows = []
    for entry in found:
        row = {"target": "export", "configuration": entry["model"]}
        for runtime in RUNTIMES:
            result, name = entry[runtime], FORMATS[runtime]
            if "error" in result:
                row[f"{name}_error"] = result["error"]
            else:
                row.update({f"{name}_b{b}": round(result[str(b)], 2) for b in batches})
        rows.append(row)
    return rows


def write(args, span, found):
    """The run file of ``found`` (:func:`rows_of`), timed as ``args`` say; its path."""
    measured = (
        "inference latency of each model exported with keras_capsules.export.export_model (SavedModel, ONNX file under "
        "ONNX Runtime, LiteRT file under the LiteRT interpreter), each runtime in a fresh process without keras_capsules, "
        f"median of {args.repeats} calls after {args.warmup} warm-up calls at batch {args.batches.replace(',', ', ')}, ms"
    )
    rows = rows_of(found, [int(b) for b in args.batches.split(",")])
    return write_run("export_latency", args, span, measured, rows, "export-latency")


def run_all(args):
    from keras_capsules import applications

    names = applications.list_configurations()
    if args.models:
        models = args.models.split(",")
    else:  # the first configuration of each constructor, e.g. EffCapsNet/mnist
        models = sorted({min(n for n in names if n.split("/")[0] == c) for c in {n.split("/")[0] for n in names}})
    batches = [int(b) for b in args.batches.split(",")]
    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    found = []
    for name in models:
        with tempfile.TemporaryDirectory() as folder:
            shape = export_all(name, folder)
            entry = {"model": name}
            for runtime in RUNTIMES:
                entry[runtime] = time_runtime(
                    runtime, os.path.join(folder, FILES[runtime]), shape, batches, args.repeats, args.warmup
                )
                if entry[runtime].pop("loaded_keras_capsules", False):
                    raise RuntimeError(f"{name}: the {runtime} timing process imported keras_capsules")
        print(json.dumps(entry), file=sys.stderr, flush=True)
        found.append(entry)
    ended = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return write(args, (started, ended), found)


def parser():
    found = run_parser(__doc__, DEFAULTS)
    found.add_argument("--models", default="", help="comma-separated configurations (default: one per constructor)")
    return found


def main(argv=None):
    return run_all(parser().parse_args(argv))


if __name__ == "__main__":
    main()
