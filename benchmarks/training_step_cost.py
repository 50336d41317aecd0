"""What one training step of an application costs: floating-point operations per image, counted from the graph.

For each router of ``--routers`` (default for ConsensusCapsNet: ``dynamic`` and the paper's ``em``,
``kernel``, ``lstm``; ``keras_capsules.applications.consensus_capsnet.PAPER_ROUTERS``) builds
``MODEL(input_shape=..., classes=..., router=..., **model_args)`` (``--model``, default
``ConsensusCapsNet``; ``--model-arg key=value`` as ``keras-capsules train`` takes them, e.g.
``--model CapsNet --routers dynamic --model-arg "router={'name': 'dynamic', 'use_bias': True}"``
for the DR-CapsNet of the side-by-side run against REM), traces one training step (the loss and
``tape.gradient``: forward + backward, batch ``--batch``) as a ``tf.function`` and counts its graph's
operations:

- flops: TensorFlow's own per-op flop statistics (what ``tf.compat.v1.profiler`` with
  ``ProfileOptionBuilder.float_operation()`` sums; the script checks it reads the same total), except
  for the batched matrix products, whose statistic is wrong for an adjoint operand and which are counted
  by :func:`~benchmarks.op_counts.batch_matmul_flops` instead (before that fix, backward routing sums were counted up to
  ``in_caps`` times over: 40 GFLOP per image for MatrixCapsNet's step at 32x32x3, 1.5 counted right), plus
  the op types that have none registered: ``Einsum`` (:func:`~benchmarks.op_counts.einsum_flops`), the element-wise ops of
  :data:`~benchmarks.op_counts.ELEMENTWISE` (one per output element) and the :data:`~benchmarks.op_counts.REDUCTIONS` (one per input element);
- transcendental elements (``Exp``, ``Cos``, ``Tanh``, ``Sigmoid``, ...; an exp costs far more than a
  multiply-add), also in the flops as one each;
- elements copied by data-movement ops (``Transpose``, ``Tile``, ``GatherV2``, ...; no flops) and
  elements written by every op: flops per byte written is how much arithmetic the step does per
  float32 it stores, the lower the more memory-bound;
- all broken down by op type and by layer: the ops a top-level layer's or its router's methods create
  (the recomputation of rematerialised layers included), each backward op counted for the forward
  op whose name scope it carries.

Counted: the traced graph, so ``ConvCaps``' rematerialisation (votes and routing recomputed in the
backward pass) is in, and so is a gradient nothing uses (the first convolution's input gradient,
0.6 MFLOP per image), which TensorFlow may prune when it runs the step. The Adam update (about 10
flops per parameter per step) is not in the graph and is negligible. Counts do not depend on the
machine or its load; step times (``--time``: median ``fit`` step after warm-up) do, so measure them
on an otherwise idle machine.

Usage: ``python -m benchmarks training_step_cost [--model ConsensusCapsNet] [--routers dynamic,em,kernel,lstm]
[--model-arg KEY=VALUE ...] [--input-shape 28,28,1] [--classes 10] [--batch 64] [--top 8] [--time]``
"""

import argparse
import ast
import collections
import functools
import inspect
import os
import re

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.op_counts import op_costs, profiler_flops  # noqa: E402

ROUTERS = ("dynamic", "em", "kernel", "lstm")


def training_loss(router):
    """The loss the library trains with: cross-entropy on the logits of the kernel/LSTM routers and of a model
    without a router (the CNN baselines), margin on capsule activations."""
    import keras

    from keras_capsules import losses

    if router in ("kernel", "lstm", "none"):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return losses.MarginLoss()


def train_step_graph(model, loss_fn, batch):
    """One traced training step (forward, loss and ``tape.gradient`` at a fixed batch size).

    Routers that compile with XLA are traced plain (``router_compilation(False)``): a compiled cluster is one
    call op whose arithmetic the counts here would miss; XLA fuses the plain graph's ops but does their work.

    Returns:
        ``(graph, owners)``: the step's graph and ``{op name: label}`` for the ops created while a
        method of a top-level layer of ``model`` (label: its name) or of its router (``"<layer>
        router"``) ran, including the forward ops a rematerialising layer recomputes in the backward pass.
    """
    import keras
    import tensorflow as tf

    from keras_capsules.ops.compile import router_compilation

    def methods(obj):
        """The methods ``obj``'s own classes define (below ``keras.layers.Layer``): ``call``, and what a
        ``keras.remat`` recomputes in the backward pass, outside ``call`` (``vote_and_route``, a
        router's iteration)."""
        names = set()
        for cls in type(obj).__mro__:
            if cls is keras.layers.Layer:
                break
            names.update(
                name for name, attr in vars(cls).items() if inspect.isfunction(attr) and not name.startswith("__")
            )
        return sorted(names)

    variables, owners = model.trainable_variables, {}
    tagged = [(layer, layer.name) for layer in model.layers]
    tagged += [
        (layer.router, f"{layer.name} router") for layer in model.layers if getattr(layer, "router", None) is not None
    ]
    tagged = [(obj, method, label) for obj, label in tagged for method in methods(obj)]

    def tag(obj, method, label):
        original = getattr(obj, method)

        @functools.wraps(original)
        def tagging(*args, **kwargs):
            graph = tf.compat.v1.get_default_graph()
            before = len(graph.get_operations())
            try:
                return original(*args, **kwargs)
            finally:
                for op in graph.get_operations()[before:]:
                    owners.setdefault(op.name, label)  # an inner (router) call has set its ops first

        setattr(obj, method, tagging)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        return tape.gradient(loss, variables)

    shape = (batch,) + tuple(model.inputs[0].shape[1:])
    for obj, method, label in tagged:
        tag(obj, method, label)
    try:
        with router_compilation(False):
            graph = step.get_concrete_function(
                tf.TensorSpec(shape, tf.float32), tf.TensorSpec((batch,), tf.int32)
            ).graph
    finally:
        for obj, method, _ in tagged:
            delattr(obj, method)
    return graph, owners


def scope_owners(owners):
    """``{name scope: label}`` for every scope prefix of the labelled op names (the first label seen)."""
    scopes = {}
    for name, label in owners.items():
        parts = name.split("/")
        for end in range(1, len(parts) + 1):
            scopes.setdefault("/".join(parts[:end]), label)
    return scopes


def owner_of(name, owners, scopes):
    """The label of op ``name``: its own (``owners``), else, for a gradient op
    ``gradient_tape/<forward scope>/...``, that of the longest forward scope it names (``scopes``:
    :func:`scope_owners`); ``"(gradient sums)"`` for ``AddN`` accumulations, else ``"(loss and other)"``."""
    if name in owners:
        return owners[name]
    parts = name.split("/")
    if parts[0] == "gradient_tape":
        for end in range(len(parts), 1, -1):
            label = scopes.get("/".join(parts[1:end]))
            if label:
                return label
    return "(gradient sums)" if re.fullmatch(r"(gradient_tape/)?AddN(_\d+)?", name) else "(loss and other)"


def measure_step_seconds(model, loss_fn, batch, steps=10, warmup=3):
    """Median ``fit`` step in seconds (Adam) on random data: valid only on an otherwise idle machine."""
    import keras
    import numpy as np

    from benchmarks.common import time_fit_step

    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=loss_fn)
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(batch,) + tuple(model.inputs[0].shape[1:])).astype("float32")
    y = rng.integers(0, model.outputs[0].shape[-1], batch)
    return time_fit_step(model, x, y, batch, steps=steps, warmup=warmup)


def summarize(rows, key):
    """Totals of ``rows`` per ``key(row)``: ``{key: [ops, flops, transcendental, copied, written]}``."""
    totals = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
    for row in rows:
        total = totals[key(row)]
        for i, value in enumerate((1, row.flops, row.transcendental, row.copied, row.written)):
            total[i] += value
    return totals


def _table(title, totals, batch, top):
    ranked = sorted(totals.items(), key=lambda item: -item[1][1])
    grand = sum(t[1] for t in totals.values()) or 1
    lines = [
        f"\n| {title} | ops | MFLOP per image | share | M transcendental per image | M copied per image | M written per image |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    rest = ranked[top:]
    shown = ranked[:top] + ([(f"({len(rest)} more)", [sum(t[i] for _, t in rest) for i in range(5)])] if rest else [])
    for name, (ops, flops, trans, copied, written) in shown:
        per_image = " | ".join(f"{value / batch / 1e6:.2f}" for value in (trans, copied, written))
        lines.append(f"| {name} | {ops} | {flops / batch / 1e6:.2f} | {100 * flops / grand:.1f} % | {per_image} |")
    return "\n".join(lines)


def _key_value(pair):
    """``"key=value"`` -> ``(key, value)``, the value a Python literal where it parses as one, else the text."""
    key, _, text = pair.partition("=")
    try:
        return key, ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return key, text


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model", default="ConsensusCapsNet", help="application constructor (default: ConsensusCapsNet)"
    )
    parser.add_argument(
        "--routers",
        default=",".join(ROUTERS),
        help="comma-separated router names, or none for a model without one (default: ConsensusCapsNet's paper routers)",
    )
    parser.add_argument(
        "--model-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="constructor argument, repeatable; a router here wins over --routers",
    )
    parser.add_argument("--input-shape", default="28,28,1", help="H,W,C (default: MNIST)")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--top", type=int, default=8, help="rows per breakdown table")
    parser.add_argument("--time", action="store_true", help="also time the fit step (needs an idle machine)")
    args = parser.parse_args()
    input_shape = tuple(int(v) for v in args.input_shape.split(","))

    from benchmarks.common import machine_description
    from keras_capsules import applications

    model_args = dict(_key_value(pair) for pair in args.model_arg)
    constructor = getattr(applications, args.model)
    print(
        f"{args.model}(input_shape={input_shape}, classes={args.classes}, {model_args}), one training step at batch {args.batch}; {machine_description()}"
    )
    summary = []
    for router in args.routers.split(","):
        routed = {} if router == "none" else {"router": router}
        model = constructor(input_shape=input_shape, classes=args.classes, **{**routed, **model_args})
        loss_fn = training_loss(router)
        graph, owners = train_step_graph(model, loss_fn, args.batch)
        scopes = scope_owners(owners)
        rows = op_costs(graph)
        registered = sum(row.flops for row in rows if row.registered)
        statistics, profiled = sum(row.statistic or 0 for row in rows), profiler_flops(graph)
        if profiled != statistics:
            raise RuntimeError(
                f"training_step_cost: the profiler counts {profiled} flops, the per-op walk of TensorFlow's statistics {statistics}."
            )
        ops, flops, trans, copied, written = summarize(rows, lambda row: "all")["all"]
        result = {
            "router": router,
            "params": model.count_params(),
            "ops": ops,
            "gflop": flops / args.batch / 1e9,
            "registered": registered / flops,
            "transcendental": trans / args.batch,
            "copied": copied / args.batch,
            "intensity": flops / (4 * written),
        }
        if args.time:
            result["step_s"] = measure_step_seconds(model, loss_fn, args.batch)
        summary.append(result)
        print(
            f"\n## {router}: {result['gflop']:.3f} GFLOP per image per step ({100 * result['registered']:.0f} % in op types with "
            f"TensorFlow-registered flops), {ops} ops per step, {trans / args.batch / 1e6:.2f} M transcendental and "
            f"{copied / args.batch / 1e6:.2f} M copied elements per image; {result['intensity']:.2f} flops per float32 byte written"
        )
        print(_table("op type", summarize(rows, lambda row: row.type), args.batch, args.top))
        print(_table("layer", summarize(rows, lambda row: owner_of(row.name, owners, scopes)), args.batch, args.top))

    timed = " step (s) |" if args.time else ""
    print(
        f"\n| router | parameters | ops per step | GFLOP per image per step | M transcendental per image | M copied per image | flops per byte written |{timed}"
    )
    print("|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if args.time else ""))
    for row in summary:
        step = f" {row['step_s']:.2f} |" if args.time else ""
        print(
            f"| {row['router']} | {row['params']:,} | {row['ops']:,} | {row['gflop']:.3f} | {row['transcendental'] / 1e6:.2f} | "
            f"{row['copied'] / 1e6:.2f} | {row['intensity']:.2f} |{step}"
        )


if __name__ == "__main__":
    main()
