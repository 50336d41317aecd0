"""Peak memory of one training step (or one inference batch): applications and single routed layers.

Each configuration runs in its own process and reports that process's peak resident set size
(``VmHWM``, :func:`benchmarks.common.peak_rss_mib`) after building (``built_mib``) and after the step
(``peak_mib``), the largest amount its tensors held at once during the step (``live_peak_mib``,
TensorFlow's allocator statistics: the RSS also counts memory the allocator keeps after a free), next to the size of the largest vote tensor of the model (``votes_mib``; the
analytic ``batch * positions * in_caps * out_caps * out_dim * 4`` bytes of each routed layer).
Memory does not depend on the load of the machine, so these numbers can be taken while it is busy.

Usage::

    python -m benchmarks memory app InvertedAttentionCapsNet/cifar10-simple,InvertedAttentionCapsNet/cifar10-resnet --batch 32 --iterations 1,3
    python -m benchmarks memory router dynamic,kernel,lstm [--phase forward|train] [--no-remat]

``app`` takes registered configurations (``keras_capsules.applications.list_configurations()``), comma-separated;
``--iterations`` sets ``routing_iterations`` (default: the configuration's own). ``router`` measures FcCaps
1152 x 8D -> 10 x 16D at batch 64 (the router table's shape) with 1, 3 and 5 iterations. ``--phase``: a
training step (``app``'s default) or a forward pass (``router``'s). ``--no-remat`` measures inside
``keras_capsules.ops.remat.recomputation(False)``, as ``train(recompute=False)`` trains (to see what
rematerialisation saves; runs before 2026-12-04 turned ``keras.remat`` into the identity instead). A single-pass router runs once, at 1 iteration.

``app`` writes ``<results>/YYYY-MM-DD-HHMM-<host>-conv-capsule-memory.json`` (rows of target ``"conv-live"``:
``configuration``, ``batch``, ``iterations``, ``rss_mib`` (the peak), ``live_mib`` and ``votes_mib`` (the
largest vote tensor), one per configuration and iterations); ``router`` writes
``<results>/YYYY-MM-DD-HHMM-<host>-router-<phase>-memory.json`` (rows of target ``"router-memory"``: ``router``,
``live_1_mib``, ``live_3_mib`` and ``live_5_mib``, one per router). The label gains the phase where it is not
its table's and ``without remat`` under ``--no-remat``. Both regenerate BENCHMARKS.md for the repository's
own results folder. A process that failed is listed with its error under the run file's ``failed`` and left
out of the rows (a router with a failed process is left out whole), as is an application without a vote tensor.
"""

import argparse
import datetime
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.runs import child_row, module_command, run_or_child, run_parser, write_run  # noqa: E402

#: The phase each mode's table shows, and each phase's name in a row's label.
TABLE_PHASE = {"app": "train", "router": "forward"}
PHASES = {"train": "training step", "forward": "forward"}
#: The iteration counts of the router table's columns.
ROUTER_ITERATIONS = (1, 3, 5)


def vote_tensors_mib(model, batch):
    """Analytic size (MiB, float32) of the vote tensor of every routed layer of ``model`` at ``batch``."""
    from keras_capsules.introspection import all_layers
    from keras_capsules.layers import ConvCaps, FcCaps

    sizes = {}
    for layer in all_layers(model):
        if isinstance(layer, (ConvCaps, FcCaps)) and layer.built:
            if layer.vote_transform.shared:
                continue
            in_caps = layer.vote_transform.kernel.shape[0]  # one transform per child
            positions = layer.output_grid[0] * layer.output_grid[1] if isinstance(layer, ConvCaps) else 1
            sizes[layer.name] = batch * positions * in_caps * layer.num_capsules * layer.out_dim * 4 / 2**20
    return sizes


def routing_iterations(model):
    """The routing iterations of each routed layer of ``model`` (the configuration's own where none are given)."""
    from keras_capsules.introspection import all_layers
    from keras_capsules.layers import ConvCaps, FcCaps

    return [layer.router.iterations for layer in all_layers(model) if isinstance(layer, (ConvCaps, FcCaps))]


def _train_step(model, x, y, loss_fn):
    """One plain gradient-descent step as a ``tf.function`` (no optimizer slots in the measurement)."""
    import tensorflow as tf

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        for variable, grad in zip(model.trainable_variables, grads):
            if grad is not None:
                variable.assign_sub(0.01 * grad)
        return loss

    return step


def measure_app(name, batch, iterations, phase):
    import keras
    import numpy as np
    import tensorflow as tf

    from benchmarks.common import live_peak_mib, peak_rss_mib, reset_live_peak
    from keras_capsules import applications

    entry = applications.get_configuration(name)
    overrides = {} if iterations is None else {"routing_iterations": iterations}
    model = entry.build(**overrides)
    shape = tuple(model.inputs[0].shape[1:])
    rng = np.random.default_rng(0)
    x = tf.constant(rng.uniform(size=(batch,) + shape).astype("float32"))
    classes = model.output_shape[-1]
    y = tf.constant(np.eye(classes, dtype="float32")[rng.integers(0, classes, batch)])
    built = peak_rss_mib()
    reset_live_peak()
    if phase == "train":
        _train_step(model, x, y, keras.losses.MeanSquaredError())().numpy()  # the loss does not change the memory
    else:
        tf.function(lambda: model(x, training=False))().numpy()
    return {
        "model": name,
        "batch": batch,
        "iterations": iterations or max(routing_iterations(model), default=None),
        "phase": phase,
        "built_mib": round(built),
        "peak_mib": round(peak_rss_mib()),
        "live_peak_mib": round(live_peak_mib()),
        "votes_mib": {k: round(v) for k, v in vote_tensors_mib(model, batch).items()},
    }


def measure_router(router, iterations, phase):
    import numpy as np
    import tensorflow as tf

    from benchmarks.common import live_peak_mib, peak_rss_mib, reset_live_peak
    from keras_capsules import layers

    batch, (in_caps, in_dim), (out_caps, out_dim) = 64, (1152, 8), (10, 16)
    rng = np.random.default_rng(0)
    poses = tf.constant(rng.normal(size=(batch, in_caps, in_dim)).astype("float32") * 0.1)
    acts = tf.constant(rng.uniform(size=(batch, in_caps)).astype("float32"))
    layer = layers.FcCaps(out_caps, out_dim, router=router, routing_iterations=iterations)
    layer((poses[:1], acts[:1]))
    built = peak_rss_mib()
    reset_live_peak()
    if phase == "train":

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                out_poses, out_acts = layer((poses, acts), training=True)
                loss = tf.reduce_mean(tf.square(out_poses)) + tf.reduce_mean(tf.square(out_acts))
            return tape.gradient(loss, layer.trainable_weights)

        step()
    else:
        tf.function(lambda: layer((poses, acts), training=False))()
    return {
        "router": router,
        "iterations": iterations,
        "phase": phase,
        "built_mib": round(built),
        "peak_mib": round(peak_rss_mib()),
        "live_peak_mib": round(live_peak_mib()),
        "votes_mib": round(batch * in_caps * out_caps * out_dim * 4 / 2**20),
    }


def label(name, raw, mode):
    """``name`` with the phase where it is not ``mode``'s table's and ``without remat`` under ``--no-remat``."""
    notes = [PHASES[raw["phase"]]] * (raw["phase"] != TABLE_PHASE[mode]) + ["without remat"] * (not raw["remat"])
    return name + (f" ({', '.join(notes)})" if notes else "")


def has_votes(raw):
    """Whether an ``app`` child's model has a vote tensor of its own of at least 1 MiB (rounded)."""
    return max(raw["votes_mib"].values(), default=0) > 0


def app_rows(measured):
    """``app`` children's figures -> the run file's ``conv-live`` rows, one per configuration and iterations; a
    model without a vote tensor (:func:`has_votes`) is left out."""
    return [
        {
            "target": "conv-live",
            "configuration": label(raw["model"], raw, "app"),
            "batch": raw["batch"],
            "iterations": raw["iterations"],
            "rss_mib": raw["peak_mib"],
            "live_mib": raw["live_peak_mib"],
            "votes_mib": max(raw["votes_mib"].values()),
        }
        for raw in measured
        if has_votes(raw)
    ]


def router_rows(measured):
    """``router`` children's figures -> the run file's ``router-memory`` rows: one per router, its live tensors'
    peak at 1, 3 and 5 iterations (``None`` where it was not measured: a single-pass router's 3 and 5)."""
    by_router = {}
    for raw in measured:
        by_router.setdefault(label(raw["router"], raw, "router"), {})[raw["iterations"]] = raw["live_peak_mib"]
    return [
        {"target": "router-memory", "router": router, **{f"live_{n}_mib": live.get(n) for n in ROUTER_ITERATIONS}}
        for router, live in by_router.items()
    ]


def write(args, span, found):
    """The run file of ``found`` (``[(name, iterations, its child's figures or {"error": ...})]``, :func:`app_rows`
    or :func:`router_rows`; the failures as ``failed``); its path. Exits without one when no row is left."""
    failed = {f"{name} x{count or 'default'}": raw["error"] for name, count, raw in found if "error" in raw}
    # A router's row needs every count it ran at: one failed process leaves the whole router out.
    broken = {name for name, _, raw in found if "error" in raw} if args.mode == "router" else set()
    measured = [raw for name, _, raw in found if "error" not in raw and name not in broken]
    rows = (app_rows if args.mode == "app" else router_rows)(measured)
    for raw in measured:
        if args.mode == "app" and not has_votes(raw):
            print(f"left out {raw['model']} x{raw['iterations']}: no vote tensor of its own", file=sys.stderr)
    if not rows:
        raise SystemExit(f"memory: no row to write, no run file written; failed: {failed}")
    remat = "; without rematerialisation (recomputation(False))" if args.no_remat else ""
    if args.mode == "app":
        measured_text = (
            f"one {PHASES[args.phase]} at batch {args.batch} (plain gradient descent, no optimizer slots), each "
            "configuration and iterations in its own process: the process's peak RSS, the largest amount "
            "TensorFlow's live tensors held at once (allocator statistics) and the analytic size of the model's "
            f"largest vote tensor{remat}"
        )
        return write_run("memory", args, span, measured_text, rows, "conv-capsule-memory", failed=failed)
    measured_text = (
        f"one {PHASES[args.phase]} of the fc-shape layer (FcCaps 1152 x 8D -> 10 x 16D, b64) at 1, 3 and 5 routing "
        f"iterations, each in its own process: the largest amount TensorFlow's live tensors held at once{remat}"
    )
    return write_run("memory", args, span, measured_text, rows, f"router-{args.phase}-memory", failed=failed)


def counts_of(args, name):
    """The iteration counts ``name`` runs at: 1, 3 and 5 for an iterative router, 1 for a single-pass one;
    ``--iterations`` for an application (``[None]``, its configuration's own, when empty)."""
    from keras_capsules import routing

    if args.mode == "router":
        return ROUTER_ITERATIONS if routing.get(name).iterative else (1,)
    return [int(i) for i in args.iterations.split(",") if i] or [None]


def run_all(args):
    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    found = []
    for name in args.name.split(","):
        for count in counts_of(args, name):
            command = module_command(
                __spec__.name, args.mode, name, "--child", "--batch", args.batch, "--phase", args.phase
            )
            command += ["--iterations", str(count)] if count is not None else []
            command += ["--no-remat"] if args.no_remat else []
            found.append((name, count, child_row(command)))
            print(f"{name} x{count or 'default'}: {json.dumps(found[-1][2])}", file=sys.stderr, flush=True)
    ended = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return write(args, (started, ended), found)


def measure_child(args):
    # TensorFlow's CPU allocator counts live tensors (get_memory_info) only as a BFC allocator, which it picks by
    # itself only with oneDNN on (CPUs with AVX-512 VNNI/BF16 or AMX, and TF_ENABLE_ONEDNN_OPTS unset). Set here,
    # in the measuring process before TensorFlow allocates, not at import (a process importing this module, a
    # test's, would pass it on to every process it starts).
    os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")
    from keras_capsules.ops.remat import recomputation

    count = int(args.iterations) if args.iterations else None
    with recomputation(not args.no_remat):
        if args.mode == "app":
            raw = measure_app(args.name, args.batch, count, args.phase)
        else:
            raw = measure_router(args.name, count, args.phase)
    return dict(raw, remat=not args.no_remat)


def parser():
    parser = run_parser(__doc__, dict(batch=32, iterations=""))
    parser.add_argument("mode", choices=("app", "router"))
    parser.add_argument("name", help="application configurations or router names, comma-separated")
    parser.add_argument("--phase", choices=("train", "forward"), default=None, help="default: the mode's table's")
    parser.add_argument(
        "--no-remat", action="store_true", help="measure without rematerialisation (ops.remat.recomputation(False))"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return parser


def arguments(argv=None):
    """The parsed ``argv``, ``--phase`` defaulting to the mode's table's; ``--iterations`` refused in router mode."""
    options = parser()
    args = options.parse_args(argv)
    if args.mode == "router" and args.iterations and not args.child:
        options.error("router measures 1, 3 and 5 iterations, its table's columns: leave out --iterations")
    args.phase = args.phase or TABLE_PHASE[args.mode]
    return args


def main(argv=None):
    return run_or_child(arguments(argv), measure_child, run_all)


if __name__ == "__main__":
    main()
