"""Where one training step of an application spends its time: TensorFlow's profiler, by op type and by layer.

Builds a registered configuration (``applications.list_configurations()``), compiles it as
``applications.py`` does, runs ``--warmup`` ``fit`` steps, then profiles ``--steps`` more and prints
two tables of host self-time per step (milliseconds, and the share of the profiled total): the op
types (``Conv2DBackpropFilter``, ``BatchMatMulV2``, ``GatherV2``, ...) and the Keras layers the ops
belong to (the first component of the op's name scope; the backward ops carry their forward
layer's name inside ``gradient_tape/``; ``Dataset`` ops are the input pipeline, which runs beside
the step). Use it to find what to optimise, on an otherwise idle
machine; the shares are what matters, the milliseconds move with the machine's load.

It also reports the first ``fit`` step (tracing included), the median step without the profiler
(``--timed`` steps in one ``fit``, after one more warm-up step; 0 to skip) and the op executions
per step the profiler traced (at its default level it traces the expensive ops only: for the whole
graph's op count use ``training_step_cost.py``). ``--input-shape H,W,C`` (and ``--classes N``) build the
configuration for other images than its registered ones; ``--json PATH`` writes all of it.

Memory: the profiler records every op execution of the profiled steps, a loop's body once per iteration,
and ``ConvCaps`` routes its output rows in a loop in training. At 64x64x3 and batch 16 the profiling
process of ``ConsensusCapsNet/smallnorb-kernel`` passed 23 GB and was killed by the OOM killer (2026-12-01,
oneDNN off), where its training step alone peaks below 3 GB (``scale.py``): profile such networks at a
smaller input or batch, and read ``scale_counts.py``'s counts at the large one.

Usage: ``python -m benchmarks profile_step InvertedAttentionCapsNet/cifar10-simple [--batch 32]
[--input-shape 64,64,3] [--classes 10] [--model-arg routing_iterations=1] [--top 15]
[--ops 20 [--op-type _MklTranspose]] [--timed 3] [--json PATH] [--run-file [--results DIR] [--host-name NAME]]``

``--run-file`` also writes the run file ``<results>/YYYY-MM-DD-HHMM-<host>-profile-step.json`` (one row of target
``profile-step``: the figures above with the step's counted GFLOP per image, graph ops and flops per byte written)
and, for the repository's own results folder, regenerates BENCHMARKS.md.
"""

import argparse
import collections
import datetime
import glob
import json
import os
import re
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def op_rows(logdir):
    """The profiled ops as ``(type, name, self_time_us, occurrences)`` rows of TensorFlow's op statistics."""
    from tensorflow.python.profiler.internal import _pywrap_profiler_plugin as plugin

    paths = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    data, ok = plugin.xspace_to_tools_data(paths, "framework_op_stats", {})
    if not ok:
        raise RuntimeError(f"profile_step: the profiler wrote no readable trace under {logdir}: {data[:200]!r}.")
    table = json.loads(data)[0]  # [0]: idle time included, as a row of its own (left out below)
    columns = [column["id"] for column in table["cols"]]
    rows = []
    for row in table["rows"]:
        values = dict(zip(columns, (cell.get("v") for cell in row["c"])))
        if values.get("host_or_device") != "Host" or values["type"] == "IDLE":
            continue
        rows.append((values["type"], values["operation"], float(values["total_self_time"]), int(values["occurrences"])))
    return rows


def layer_of(op_name, model_name):
    """The Keras layer an op belongs to: its first name scope below the model's (``gradient_tape/`` dropped)."""
    wrappers = rf"gradient_tape|StatefulPartitionedCall(_\d+)?|{re.escape(model_name)}(_\d+)?"
    parts = [part for part in op_name.split("/") if part and not re.fullmatch(wrappers, part)]
    return parts[0] if len(parts) > 1 else "(outside the layers)"


def grouped(rows, key, steps):
    totals = collections.Counter()
    for op_type, name, self_us, _ in rows:
        totals[key(op_type, name)] += self_us
    grand = sum(totals.values()) or 1.0
    return [(name, us / 1e3 / steps, us / grand) for name, us in totals.most_common()], grand / 1e3 / steps


def input_shape_arg(text):
    """``"64,64,3"`` -> ``(64, 64, 3)``: an argparse type."""
    try:
        shape = tuple(int(v) for v in text.split(","))
    except ValueError:
        shape = ()
    if len(shape) != 3 or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"expected H,W,C (three positive integers), received {text!r}")
    return shape


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("configuration", help="e.g. InvertedAttentionCapsNet/cifar10-simple")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--top", type=int, default=15, help="rows per table")
    parser.add_argument("--ops", type=int, default=0, help="also list the N most expensive single ops by name")
    parser.add_argument("--op-type", default=None, help="list only single ops of this type (e.g. _MklTranspose)")
    parser.add_argument(
        "--model-arg", action="append", default=[], metavar="KEY=VALUE", help="constructor argument (repeatable)"
    )
    parser.add_argument(
        "--input-shape",
        type=input_shape_arg,
        default=None,
        metavar="H,W,C",
        help="images of this shape (default: the configuration's)",
    )
    parser.add_argument("--classes", type=int, default=None, help="classes (default: the configuration's)")
    parser.add_argument(
        "--timed", type=int, default=3, help="steps timed without the profiler (median), after the warm-up; 0: none"
    )
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures and tables as JSON")
    parser.add_argument(
        "--run-file",
        action="store_true",
        help="also write a run file of benchmarks/report.py (a row of target profile-step, with the step's counted figures)",
    )
    parser.add_argument(
        "--results",
        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"),
        help="folder of the run file",
    )
    parser.add_argument(
        "--host-name", default=None, help="the host's name in the run file (default: CPU, cores and date)"
    )
    args = parser.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc)

    import keras
    import numpy as np
    import tensorflow as tf

    from benchmarks.applications import _loss_for
    from benchmarks.common import machine_description, time_fit_step
    from keras_capsules import applications
    from keras_capsules.cli.options import (
        key_values,  # the CLI's KEY=VALUE parsing, as `keras-capsules train --model-arg`
    )

    entry = applications.get_configuration(args.configuration)
    overrides = key_values(args.model_arg, "--model-arg")
    if args.input_shape:
        overrides["input_shape"] = args.input_shape
    if args.classes:
        overrides["classes"] = args.classes
    kwargs = {**entry.kwargs, **overrides}
    model = entry.constructor(**kwargs)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=_loss_for(model))
    shape = tuple(model.inputs[0].shape[1:])
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(args.batch,) + shape).astype("float32")
    y = rng.integers(0, model.outputs[0].shape[-1], args.batch)
    start = time.perf_counter()
    model.fit(x, y, batch_size=args.batch, epochs=1, verbose=0)  # traces: the first step
    first_step_s = time.perf_counter() - start
    if args.warmup > 1:
        model.fit(x, y, batch_size=args.batch, epochs=args.warmup - 1, verbose=0)
    step_s = time_fit_step(model, x, y, args.batch, steps=args.timed, warmup=1) if args.timed else None

    with tempfile.TemporaryDirectory() as logdir:
        tf.profiler.experimental.start(logdir)
        model.fit(x, y, batch_size=args.batch, epochs=args.steps, verbose=0)
        tf.profiler.experimental.stop()
        rows = op_rows(logdir)

    executions = sum(row[3] for row in rows if row[0] != "Dataset") / args.steps
    record = {
        "configuration": args.configuration,
        "kwargs": {k: repr(v) for k, v in kwargs.items()},
        "batch": args.batch,
        "input_shape": list(shape),
        "profiled_steps": args.steps,
        "machine": machine_description(),
        "package": os.path.dirname(applications.__file__.rsplit(os.sep, 1)[0]),
        "first_step_s": round(first_step_s, 2),
        "step_s": None if step_s is None else round(step_s, 3),
        "op_executions_per_step": round(executions),
        "op_names": len({row[1] for row in rows if row[0] != "Dataset"}),
    }
    print(
        f"{args.configuration} {kwargs if overrides else ''} batch {args.batch}, {args.steps} profiled steps; {machine_description()}"
    )
    print(
        f"first step (tracing included) {first_step_s:.1f} s; step without the profiler {'—' if step_s is None else f'{step_s * 1e3:.0f} ms'} "
        f"(median of {args.timed}); {executions:,.0f} traced op executions per step ({record['op_names']:,} distinct ops)"
    )
    for title, key in (
        ("op type", lambda op_type, name: op_type),
        ("layer", lambda op_type, name: "(input pipeline)" if op_type == "Dataset" else layer_of(name, model.name)),
    ):
        table, total = grouped(rows, key, args.steps)
        record[title.replace(" ", "_") + "s"] = [
            {"name": name, "ms": round(ms, 2), "share": round(share, 4)} for name, ms, share in table
        ]
        record["profiled_ms_per_step"] = round(total, 1)
        print(f"\n| {title} | self time per step (ms) | share |\n|---|---:|---:|")
        for name, ms, share in table[: args.top]:
            print(f"| {name} | {ms:.1f} | {100 * share:.1f} % |")
        print(f"| total ({len(table)} {title}s) | {total:.1f} | 100 % |")
    if args.ops:
        print("\n| op | type | self time per step (ms) |\n|---|---|---:|")
        chosen = [row for row in rows if args.op_type in (None, row[0])]
        for op_type, name, self_us, _ in sorted(chosen, key=lambda row: -row[2])[: args.ops]:
            print(f"| `{name}` | {op_type} | {self_us / 1e3 / args.steps:.1f} |")
        record["ops"] = [
            {"name": name, "type": op_type, "ms": round(self_us / 1e3 / args.steps, 2)}
            for op_type, name, self_us, _ in sorted(chosen, key=lambda row: -row[2])[: args.ops]
        ]
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(record, handle, indent=1)
    if args.run_file:
        write_profile_run(args, started, model, _loss_for(model), record)


def report_row(record, counted, package):
    """A ``profile-step`` row of ``benchmarks/report.py`` from this script's ``record`` and the step's ``counted``
    figures (``training_step_cost``'s ``summarize(rows, ...)["all"]``: ops, flops, transcendental, copied, written)."""
    ops, flops, _, copied, written = counted
    batch = record["batch"]
    return {
        "target": "profile-step",
        "configuration": record["configuration"],
        "input": "x".join(str(v) for v in record["input_shape"]),
        "batch": batch,
        "package": package,
        "step_ms": None if record["step_s"] is None else round(1e3 * record["step_s"]),
        "first_step_s": round(record["first_step_s"]),
        "gflop_per_image": round(flops / batch / 1e9, 3),
        "graph_ops": ops,
        "flops_per_byte": round(flops / (4 * written), 2),
        "m_copied_per_image": round(copied / batch / 1e6, 2),
        "traced_ops_per_step": record["op_executions_per_step"],
        "profiled_ms_per_step": record["profiled_ms_per_step"],
        "profiled_steps": record["profiled_steps"],
        "op_types": [[row["name"], row["share"]] for row in record["op_types"][:12]],
        "layers": [[row["name"], row["share"]] for row in record["layers"][:12]],
    }


def write_profile_run(args, started, model, loss_fn, record):
    """Counts the profiled step's graph and writes the run file (``runs.write_run``, kind ``profile-step``)."""
    from benchmarks import runs
    from benchmarks.op_counts import op_costs
    from benchmarks.training_step_cost import summarize, train_step_graph

    graph, _ = train_step_graph(model, loss_fn, args.batch)
    counted = summarize(op_costs(graph), lambda row: "all")["all"]
    row = report_row(record, counted, runs.package_record()["commit"][:7])
    measured = (
        f"one training step (fit, batch {args.batch}, random data): TensorFlow's profiler's host self time per op type and "
        f"layer over {args.steps} profiled step(s) (the ops it traces: the expensive ones), the first fit step (tracing "
        f"included) and the median of {args.timed} step(s) without the profiler, from the profiling process; counted GFLOP "
        f"per image, ops in the step's graph and flops per float32 byte written from training_step_cost.py's count of the "
        f"traced graph"
    )
    runs.write_run(
        "profile_step",
        args,
        (started, datetime.datetime.now(datetime.timezone.utc)),
        measured,
        [row],
        "profile-step",
    )


if __name__ == "__main__":
    main()
