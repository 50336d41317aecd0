"""Inference latency of the exported applications: SavedModel (TensorFlow), ONNX Runtime and LiteRT, batch 1 and 64.

Each registered application configuration (random weights: latency does not depend on them) is
exported once to the three formats with ``keras_capsules.export.export_model``; then every
(model, runtime) pair is timed in its own fresh process that does not import ``keras_capsules``:
the median wall time of ``--repeats`` calls after ``--warmup`` calls, per batch size. LiteRT and
ONNX Runtime use every core (``num_threads`` / their default), like TensorFlow.

Usage::

    python -m benchmarks export_latency [--models EffCapsNet/mnist,CapsNet/mnist] [--batches 1,64]
                                        [--repeats 50] [--warmup 5] [--markdown PATH]

Writes ``benchmarks/results/export_latency.json`` and prints (and with ``--markdown`` writes) a
Markdown table with the machine named. Time only on an otherwise idle machine.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

RUNTIMES = ("savedmodel", "onnxruntime", "litert")
FILES = {"savedmodel": "savedmodel", "onnxruntime": "model.onnx", "litert": "model.tflite"}
FORMATS = {"savedmodel": "savedmodel", "onnxruntime": "onnx", "litert": "litert"}

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
print("RESULT " + json.dumps(result))
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
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1][7:])


def table(payload):
    batches = payload["batches"]
    header = "| model | " + " | ".join(f"{r} b{b} (ms)" for r in RUNTIMES for b in batches) + " |"
    lines = [f"Machine: {payload['machine']}", "", header, "|---|" + "---:|" * (len(RUNTIMES) * len(batches))]
    for row in payload["rows"]:
        cells = []
        for runtime in RUNTIMES:
            result = row[runtime]
            cells += (
                [f"error: {result['error']}"] + [""] * (len(batches) - 1)
                if "error" in result
                else [f"{result[str(b)]:.2f}" for b in batches]
            )
        lines.append(f"| {row['model']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=None, help="comma-separated configurations (default: one per constructor)")
    parser.add_argument("--batches", default="1,64")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--markdown", default=None, help="also write the table to this file")
    args = parser.parse_args()
    from benchmarks.common import machine_description, write_results
    from keras_capsules import applications

    names = applications.list_configurations()
    if args.models:
        models = args.models.split(",")
    else:  # the first configuration of each constructor, e.g. EffCapsNet/mnist
        models = sorted({min(n for n in names if n.split("/")[0] == c) for c in {n.split("/")[0] for n in names}})
    batches = [int(b) for b in args.batches.split(",")]
    rows = []
    for name in models:
        with tempfile.TemporaryDirectory() as folder:
            shape = export_all(name, folder)
            row = {"model": name, "input_shape": shape}
            for runtime in RUNTIMES:
                row[runtime] = time_runtime(
                    runtime, os.path.join(folder, FILES[runtime]), shape, batches, args.repeats, args.warmup
                )
                if row[runtime].pop("loaded_keras_capsules", False):
                    raise RuntimeError(f"{name}: the {runtime} timing process imported keras_capsules")
        print(json.dumps(row), flush=True)
        rows.append(row)
    payload = {"machine": machine_description(), "batches": batches, "repeats": args.repeats, "rows": rows}
    write_results("export_latency", payload)
    text = table(payload)
    print("\n" + text)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
