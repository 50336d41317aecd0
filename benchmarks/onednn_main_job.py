"""What TensorFlow's oneDNN kernels are worth to the README's main job: its training step with them on and off.

    python -m benchmarks onednn_main_job [--rounds 6] [--steps 60] [--results DIR] [--host-name NAME]

The main job (`keras-capsules train EffCapsNet`: the paper recipe on the embedded MNIST sample, batch 16,
Efficient-CapsNet's augmentation, the reconstruction decoder) trains ``--steps`` steps in a fresh
process with ``TF_ENABLE_ONEDNN_OPTS=1`` and in another with ``0``, alternately, ``--rounds`` times.
Each process reports the median of its steps after the first ten (tracing and first calls). The run
file (``benchmarks/results/YYYY-MM-DD-HHMM-<host>-onednn-main-job.json``, :func:`benchmarks.runs.write_run`)
records every process's median, the median of each setting and their ratio (:func:`rows_of`). Why it is
measured: the command line turns oneDNN off on TensorFlow 2.21 (``keras_capsules.cli.onednn``),
where it corrupts the heap now and then (``tools/soak/README.md``). Both processes use TensorFlow's pooling CPU
allocator, as the command line does (``keras_capsules.cli.cpu_allocator``; with oneDNN on TensorFlow picks it itself).
"""

import datetime
import statistics
import sys

#: The main job's case for :mod:`benchmarks.recipe_ab`: EffCapsNet on the embedded sample at batch 16, ten steps untimed.
MAIN_JOB = ("EffCapsNet", "mnist_sample", "default", 16)


def run_once(onednn, steps):
    """The median step seconds of one fresh process with oneDNN on or off (and the CLI's pooling allocator)."""
    from benchmarks import recipe_ab

    setting = {"env": {"TF_ENABLE_ONEDNN_OPTS": "1" if onednn else "0", "TF_CPU_ALLOCATOR_USE_BFC": "true"}}
    label = f"oneDNN {'on' if onednn else 'off'}"
    return recipe_ab.run_once("onednn_main_job", (*MAIN_JOB, steps, 10), label, setting, None)["median_step_seconds"]


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
    from benchmarks.runs import alternating, run_parser, write_run

    parser = run_parser(__doc__, dict(rounds=6, steps=60))
    args = parser.parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    medians = {"on": [], "off": []}
    for round_index, setting in alternating(("on", "off"), args.rounds):
        medians[setting].append(run_once(setting == "on", args.steps))
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
