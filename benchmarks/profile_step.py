"""Where one training step of an application spends its time: TensorFlow's profiler, by op type and by layer.

Builds a registered configuration (``applications.list_configurations()``), compiles it as
``applications.py`` does, runs ``--warmup`` ``fit`` steps, then profiles ``--steps`` more and prints
two tables of host self-time per step (milliseconds, and the share of the profiled total): the op
types (``Conv2DBackpropFilter``, ``BatchMatMulV2``, ``GatherV2``, ...) and the Keras layers the ops
belong to (the first component of the op's name scope; the backward ops carry their forward
layer's name inside ``gradient_tape/``; ``Dataset`` ops are the input pipeline, which runs beside
the step). Use it to find what to optimise, on an otherwise idle
machine; the shares are what matters, the milliseconds move with the machine's load.

Usage: ``python benchmarks/profile_step.py InvertedAttentionCapsNet/cifar10-simple [--batch 32]
[--model-arg routing_iterations=1] [--top 15] [--ops 20 [--op-type _MklTranspose]]``
"""

import argparse
import collections
import glob
import json
import os
import re
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("configuration", help="e.g. InvertedAttentionCapsNet/cifar10-simple")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--top", type=int, default=15, help="rows per table")
    parser.add_argument("--ops", type=int, default=0, help="also list the N most expensive single ops by name")
    parser.add_argument("--op-type", default=None, help="list only single ops of this type (e.g. _MklTranspose)")
    parser.add_argument("--model-arg", action="append", default=[], metavar="KEY=VALUE", help="constructor argument (repeatable)")
    args = parser.parse_args()

    import keras
    import numpy as np
    import tensorflow as tf

    from applications import _loss_for
    from common import machine_description
    from keras_capsules import applications
    from keras_capsules.cli.options import key_values  # the CLI's KEY=VALUE parsing, as `keras-capsules train --model-arg`

    entry = applications.get_configuration(args.configuration)
    kwargs = {**entry.kwargs, **key_values(args.model_arg, "--model-arg")}
    model = entry.constructor(**kwargs)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=_loss_for(model))
    shape = tuple(model.inputs[0].shape[1:])
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(args.batch,) + shape).astype("float32")
    y = rng.integers(0, model.outputs[0].shape[-1], args.batch)
    model.fit(x, y, batch_size=args.batch, epochs=args.warmup, verbose=0)  # traces and warms up

    with tempfile.TemporaryDirectory() as logdir:
        tf.profiler.experimental.start(logdir)
        model.fit(x, y, batch_size=args.batch, epochs=args.steps, verbose=0)
        tf.profiler.experimental.stop()
        rows = op_rows(logdir)

    print(f"{args.configuration} {kwargs if args.model_arg else ''} batch {args.batch}, {args.steps} profiled steps; {machine_description()}")
    for title, key in (("op type", lambda op_type, name: op_type), ("layer", lambda op_type, name: "(input pipeline)" if op_type == "Dataset" else layer_of(name, model.name))):
        table, total = grouped(rows, key, args.steps)
        print(f"\n| {title} | self time per step (ms) | share |\n|---|---:|---:|")
        for name, ms, share in table[: args.top]:
            print(f"| {name} | {ms:.1f} | {100 * share:.1f} % |")
        print(f"| total ({len(table)} {title}s) | {total:.1f} | 100 % |")
    if args.ops:
        print(f"\n| op | type | self time per step (ms) |\n|---|---|---:|")
        chosen = [row for row in rows if args.op_type in (None, row[0])]
        for op_type, name, self_us, _ in sorted(chosen, key=lambda row: -row[2])[: args.ops]:
            print(f"| `{name}` | {op_type} | {self_us / 1e3 / args.steps:.1f} |")


if __name__ == "__main__":
    main()
