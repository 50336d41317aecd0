"""What a training step of each application counts at larger inputs: arithmetic, transcendentals, bytes written.

For each application label of ``--only`` (``benchmarks/scale.py``'s :data:`~scale.APPLICATIONS`, built and
given its loss as there) and each ``--sizes`` side ``S`` (input ``S x S x 3``, 10 classes, batch
``--batch``), traces one training step and counts its graph with ``benchmarks/training_step_cost.py``'s
counter: GFLOP per image, transcendental elements per image (``exp``, ``cos``, ... each one flop in the
GFLOP, though each costs many multiply-adds), elements written and copied per image, flops per float32
byte written (the lower, the more the step is bound by memory traffic), the ops in the step's graph,
and the op types that count the most.

The counts depend on the graph only, not on the machine or its load: the run can share the machine
with other work, and its rows stand beside any host's step times (``scale.py``'s run files give the
GFLOP/s achieved). Writes ``<results>/YYYY-MM-DD-HHMM-<host>-step-cost.json`` (rows of target
``"step-cost"``) and, for the repository's own results folder, regenerates BENCHMARKS.md.

Usage::

    python -m benchmarks scale_counts [--only MatrixCapsNet,ConsensusCapsNet,BaselineCNN] [--sizes 64] [--batch 16]
"""

import datetime
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks import runs, scale  # noqa: E402

DEFAULTS = dict(only="BaselineCNN,ConsensusCapsNet-dynamic,ConsensusCapsNet,MatrixCapsNet", sizes="64", batch=16, top=8)


def count_row(label, size, batch, top):
    """The counted figures of ``label``'s training step at ``size x size x 3`` and ``batch`` (a ``step-cost`` row)."""
    from benchmarks.applications import _loss_for
    from benchmarks.op_counts import op_costs
    from benchmarks.training_step_cost import summarize, train_step_graph
    from keras_capsules import applications

    name, overrides = scale.KNOWN[label]
    model = applications.get_configuration(name).build(
        **{**overrides, "input_shape": (size, size, 3), "classes": scale.CLASSES}
    )
    graph, _ = train_step_graph(model, _loss_for(model), batch)
    rows = op_costs(graph)
    ops, flops, transcendental, copied, written = summarize(rows, lambda row: "all")["all"]
    by_type = sorted(summarize(rows, lambda row: row.type).items(), key=lambda item: -item[1][1])

    def per_image(value):
        return round(value / batch / 1e6, 2)

    return {
        "target": "step-cost",
        "application": label,
        "configuration": name,
        "input": f"{size}x{size}x3",
        "batch": batch,
        "parameters": model.count_params(),
        "graph_ops": ops,
        "gflop_per_image": round(flops / batch / 1e9, 4),
        "m_transcendental_per_image": per_image(transcendental),
        "m_copied_per_image": per_image(copied),
        "m_written_per_image": per_image(written),
        "flops_per_byte": round(flops / (4 * written), 3),
        "op_types": [
            {
                "op_type": op_type,
                "mflop_per_image": per_image(totals[1]),
                "m_transcendental_per_image": per_image(totals[2]),
                "m_written_per_image": per_image(totals[4]),
            }
            for op_type, totals in by_type[:top]
        ],
    }


def main(argv=None):
    args = runs.run_parser(__doc__, DEFAULTS).parse_args(argv)
    labels = args.only.split(",")
    unknown = [label for label in labels if label not in scale.KNOWN]
    if unknown:
        raise SystemExit(
            f"scale_counts: argument --only: unknown application(s) {unknown}; expected some of {list(scale.KNOWN)}"
        )
    started = datetime.datetime.now(datetime.timezone.utc)
    rows = [count_row(label, int(size), args.batch, args.top) for size in args.sizes.split(",") for label in labels]
    measured = (
        f"one training step of each application (its paper configuration, 10 classes, RGB, batch {args.batch}; the "
        f"library's loss for its scores, as scale.py), traced and counted from its graph by training_step_cost.py's "
        f"counter (a loop's body once per iteration): GFLOP, transcendental, written and copied elements per image, "
        f"flops per float32 byte written, ops in the graph; counts, not times: the machine's load does not change them"
    )
    return runs.write_run(
        "scale_counts", args, (started, datetime.datetime.now(datetime.timezone.utc)), measured, rows, "step-cost"
    )


if __name__ == "__main__":
    main()
