"""What TensorFlow's oneDNN kernels are worth to the README's main job: its training step with them on and off.

    python -m benchmarks onednn_main_job [--rounds 6] [--steps 60] [--results DIR] [--host-name NAME]

The main job (`keras-capsules train EffCapsNet`: the paper recipe on the embedded MNIST sample, batch 16,
Efficient-CapsNet's augmentation, the reconstruction decoder) trains ``--steps`` steps in a fresh
process with ``TF_ENABLE_ONEDNN_OPTS=1`` and in another with ``0``, alternately, ``--rounds`` times.
Each process reports the median of its steps after the first ten (tracing and first calls). The run
file (``benchmarks/results/YYYY-MM-DD-HHMM-<host>-onednn-main-job.json``, :func:`benchmarks.runs.write_run`)
records every process's median, the median of each setting and their ratio (:func:`rows_of`). Why it is
measured: the command line turns oneDNN off on TensorFlow 2.21 (``keras_capsules.cli.native_settings``),
where it corrupts the heap now and then (``tools/soak/README.md``).
"""

import datetime
import os
import statistics
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
print("ROW " + json.dumps({"median_step_seconds": statistics.median(timer.times[10:]), "steps": len(timer.times)}))
"""


def run_once(onednn, steps, folder):
    """The median step seconds of one fresh process with oneDNN on or off."""
    from benchmarks.runs import child_row

    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="1" if onednn else "0", TF_CPP_MIN_LOG_LEVEL="3")
    row = child_row([sys.executable, "-c", CHILD, str(steps), folder], env=env)
    if "error" in row:
        raise SystemExit(f"onednn_main_job: the process with oneDNN {'on' if onednn else 'off'} failed: {row['error']}")
    return row["median_step_seconds"]


def rows_of(medians):
    """The run file's rows of ``medians`` (``{"on": [seconds per process], "off": [...]}``): each setting's median
    and its processes' in ms, and off / on on the second row."""
    on, off = statistics.median(medians["on"]), statistics.median(medians["off"])
    return [
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
    ]


def main(argv=None):
    from benchmarks.runs import run_parser, write_run

    parser = run_parser(__doc__, dict(rounds=6, steps=60))
    args = parser.parse_args(argv)
    import tempfile

    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    medians = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as work:
        for round_index in range(args.rounds):
            for setting in ("on", "off") if round_index % 2 == 0 else ("off", "on"):
                folder = os.path.join(work, f"{setting}-{round_index}")
                medians[setting].append(run_once(setting == "on", args.steps, folder))
                print(
                    f"round {round_index + 1}, oneDNN {setting}: {1000 * medians[setting][-1]:.1f} ms per step",
                    file=sys.stderr,
                    flush=True,
                )
    ended = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    measured = (
        f"the main job's training step: median of the steps after the tenth in each fresh process ({args.steps} "
        f"steps), {args.rounds} processes per setting, alternating"
    )
    return write_run("onednn_main_job", args, (started, ended), measured, rows_of(medians), "onednn-main-job")


if __name__ == "__main__":
    main()
