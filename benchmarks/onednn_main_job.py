"""What TensorFlow's oneDNN kernels are worth to the README's main job: its training step with them on and off.

    python -m benchmarks onednn_main_job [--rounds 6] [--steps 60] [--output benchmarks/results/NAME.json]

The main job (`keras-capsules train EffCapsNet`: the paper recipe on the embedded MNIST sample, batch 16,
Efficient-CapsNet's augmentation, the reconstruction decoder) trains ``--steps`` steps in a fresh
process with ``TF_ENABLE_ONEDNN_OPTS=1`` and in another with ``0``, alternately, ``--rounds`` times.
Each process reports the median of its steps after the first ten (tracing and first calls). The run
file records every process's median, the median of each setting, their ratio, and the host. Why it is
measured: the command line turns oneDNN off on TensorFlow 2.21 (``keras_capsules.cli.native_settings``),
where it corrupts the heap now and then (``tools/soak/README.md``).
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

CHILD = """
import json, statistics, sys, time
import keras
from keras_capsules.training import train

class Steps(keras.callbacks.Callback):
    times = []
    def on_train_batch_begin(self, batch, logs=None):
        self.start = time.perf_counter()
    def on_train_batch_end(self, batch, logs=None):
        self.times.append(time.perf_counter() - self.start)

steps = int(sys.argv[1])
timer = Steps()
train("EffCapsNet", "mnist_sample", epochs=1, limit=16 * steps, eval_limit=16, output=sys.argv[2], verbose=0, export=False,
      memory_check="off", validation_examples=0, callbacks=[timer])
print("RESULT", json.dumps({"median_step_seconds": statistics.median(timer.times[10:]), "steps": len(timer.times)}))
"""


def run_once(onednn, steps, folder):
    """The median step seconds of one fresh process with oneDNN on or off."""
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="1" if onednn else "0", TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(steps), folder], env=env, capture_output=True, text=True, check=True
    )
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])["median_step_seconds"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6, help="processes per setting (default: 6)")
    parser.add_argument("--steps", type=int, default=60, help="training steps per process (default: 60)")
    parser.add_argument("--output", help="run file (default: benchmarks/results/<date>-onednn-main-job.json)")
    args = parser.parse_args(argv)
    import tempfile

    from benchmarks.runs import host_record

    medians = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as work:
        for round_index in range(args.rounds):
            for setting in ("on", "off") if round_index % 2 == 0 else ("off", "on"):
                folder = os.path.join(work, f"{setting}-{round_index}")
                medians[setting].append(run_once(setting == "on", args.steps, folder))
                print(
                    f"round {round_index + 1}, oneDNN {setting}: {1000 * medians[setting][-1]:.1f} ms per step",
                    flush=True,
                )
    on, off = statistics.median(medians["on"]), statistics.median(medians["off"])
    now = datetime.datetime.now(datetime.timezone.utc)
    host, software = host_record()
    record = {
        "host": host,
        "date": f"{now:%Y-%m-%d}",
        "time_utc": f"{now:%H:%M}",
        "command": "python -m benchmarks onednn_main_job " + " ".join(argv if argv is not None else sys.argv[1:]),
        "measured": f"the main job's training step: median of the steps after the tenth in each fresh process ({args.steps} steps), processes alternating",
        "source": "benchmarks/onednn_main_job.py",
        "software": software,
        "rows": [
            {
                "target": "onednn-main-job",
                "setting": "oneDNN on (TF_ENABLE_ONEDNN_OPTS=1)",
                "median_ms": round(1000 * on, 1),
                "process_ms": [round(1000 * v, 1) for v in medians["on"]],
            },
            {
                "target": "onednn-main-job",
                "setting": "oneDNN off (TF_ENABLE_ONEDNN_OPTS=0, what the CLI sets on TF 2.21)",
                "median_ms": round(1000 * off, 1),
                "process_ms": [round(1000 * v, 1) for v in medians["off"]],
                "off_over_on": round(off / on, 2),
            },
        ],
    }
    output = args.output or os.path.join(os.path.dirname(__file__), "results", f"{now:%Y-%m-%d}-onednn-main-job.json")
    with open(output, "w") as handle:
        json.dump(record, handle, indent=2)
        handle.write("\n")
    print(f"oneDNN on {1000 * on:.1f} ms, off {1000 * off:.1f} ms per step: off / on = {off / on:.2f} ({output})")


if __name__ == "__main__":
    main()
