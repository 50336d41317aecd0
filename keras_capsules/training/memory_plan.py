"""Know before you train: the peak memory of a training step before the first step, and the epoch's time after a few.

- :func:`estimate` traces one training step of a model at a batch size (no step runs: a few seconds)
  and returns a :class:`TrainingPlan`: parameters, the estimated peak resident memory of the training
  process and its parts, steps per epoch; ``plan.describe()`` gives the lines to print.
- :func:`check` raises :class:`MemoryPlanError` when the estimate exceeds a limit (by default
  :func:`available_bytes`, what this process can still use), naming the model, input, batch, the
  estimate, the limit and the largest batch that fits, instead of the kernel's OOM killer ending the
  run later.
- :func:`plan_fastest`: the plan without rematerialisation when it fits with room to spare, else the checked plan
  with it (what :func:`~keras_capsules.training.train` trains with by default).
- :class:`EpochTimeEstimate`: a callback that prints the estimated epoch time after a few steady steps.
- :func:`parse_size` reads ``"8GB"``, ``"512MiB"``; :func:`format_size` writes bytes back.

The parts live beside this module and are imported from here too: :mod:`~keras_capsules.training.process_memory`
(:func:`available_bytes`, :func:`resident_bytes`), :mod:`~keras_capsules.training.graph_liveness`
(:func:`live_tensors`, the graph replay of step 2 below), :mod:`~keras_capsules.training.routed_scope` (which
ops the routed layers made) and :mod:`~keras_capsules.training.epoch_time` (:class:`EpochTimeEstimate`).

Use, with the model compiled as it will train::

    plan = memory_plan.estimate(model, batch_size=16, examples=60_000)
    print(plan.describe())
    memory_plan.check(plan)  # or check(plan, memory_plan.parse_size("8GB"))
    model.fit(data, epochs=10, callbacks=[memory_plan.EpochTimeEstimate()])

How the peak is estimated (TensorFlow backend only: the graph walk reads a traced TensorFlow graph;
another backend gets a ``ValueError``):

1. The step is traced as a ``tf.function`` concrete function at the batch size: ``model(x, training=True)``,
   the loss (``model.compute_loss`` of a compiled model, so the reconstruction decoder that
   :class:`~keras_capsules.applications.CapsuleClassifier` runs in its loss is in; the mean square of
   the outputs for a model that is not compiled, which then leaves out what only a compiled loss runs)
   and ``tape.gradient`` of the trainable weights (:func:`~keras_capsules.training.shape_plan.traced_step`).
   Routers that XLA compiles (``jit_compile``) are traced as their plain graph
   (:func:`~keras_capsules.ops.compile.router_compilation`): a compiled cluster would be one op to the
   replay below, its temporaries unseen. The plain graph's are what the constants were fitted on, and they
   stand for XLA's: over 12 configurations with compiled routers the estimate read 0.81-1.07 of the measured
   peak (2026-12-04), against 0.49-0.60 for ConsensusCapsNet with kernel routing with the clusters opaque.
   A model built from its shapes alone (:func:`~keras_capsules.training.shape_plan.from_shapes`: no
   weight allocated) is planned the same way, before anything is allocated.
2. Its ops are replayed one at a time in the order they were created (the forward pass, then the
   backward pass): an op's outputs are allocated when it runs and freed once their last consumer has
   run; views (``Identity``, ``Reshape``, ``Squeeze``, ...) share their input's memory and variable reads
   are the weights. The most bytes live at once is ``step_live_bytes``: the activations the backward pass
   keeps, the transients of the moment (the votes a rematerialised capsule layer recomputes in the
   backward pass included: the routers' ``(batch * positions, in_caps, out_caps, dim)`` vote tensors
   are ops of the graph), and the gradients produced so far. Its part made by routed capsule layers
   (ops made while a method of a router, of a layer that holds one or of a layer that holds such
   layers runs, their gradients included) gives ``votes_bytes``.
   The ops inside a functional conditional (``StatelessIf``, FMCapsNet's router) are not replayed:
   their outputs are counted, their temporaries are not. A loop's body (``ConvCaps`` routes its output
   rows in one) is replayed once and its peak added while the loop runs; what the loop keeps across
   iterations for the gradient (each row's inputs) is not counted.
3. The process's peak resident memory is then::

       peak = baseline + weights + optimizer slots x trainable weights
              + LIVE_FACTOR x step_live_bytes + BYTES_PER_OP x ops

   ``LIVE_FACTOR`` (allocator overhead and fragmentation over the live tensors, the optimizer's
   temporaries, TensorFlow running independent ops side by side) and ``BYTES_PER_OP`` (the memory
   TensorFlow spends on the step's graph: the Keras train function, its optimisation and kernels) are
   the two calibrated constants, fitted on the peak resident memory of fresh training processes (see
   their comments); ``baseline`` is :data:`PROCESS_BASELINE_BYTES`, measured.

The estimate covers one process on a CPU; it does not model accelerator memory or several replicas.
"""

import dataclasses
import math
import re
from collections.abc import Callable

import keras

from keras_capsules import errors
from keras_capsules.ops.compile import router_compilation
from keras_capsules.ops.remat import recomputation
from keras_capsules.training import shape_plan
from keras_capsules.training.epoch_time import EpochTimeEstimate, format_seconds
from keras_capsules.training.graph_liveness import LiveTensors, live_tensors, loop_body_graph
from keras_capsules.training.process_memory import available_bytes, resident_bytes
from keras_capsules.training.routed_scope import in_routed_scope, routed_layers, routed_scope

__all__ = [  # the plan's own, and what it reads from its helper modules (imported from here too)
    "BYTES_PER_OP",
    "LIVE_FACTOR",
    "PROCESS_BASELINE_BYTES",
    "EpochTimeEstimate",
    "LiveTensors",
    "MemoryPlanError",
    "TrainingPlan",
    "available_bytes",
    "check",
    "estimate",
    "format_seconds",
    "format_size",
    "largest_batch",
    "live_tensors",
    "loop_body_graph",
    "optimizer_slots",
    "parse_size",
    "plan_fastest",
    "resident_bytes",
    "variables_bytes",
]

#: Peak resident memory of a fresh process that imports keras_capsules (TensorFlow, Keras) and runs one
#: ``train_on_batch`` of a two-weight model: the runtime every training process pays before its model.
#: Measured by ``benchmarks/memory_plan.py``: 795 MB and 790 MB in two runs (TensorFlow 2.21 CPU,
#: Keras 3.15, Python 3.11, Linux x86-64); a CUDA build of TensorFlow loads more.
PROCESS_BASELINE_BYTES = 795_000_000
#: The two calibrated constants (see the module docstring), fitted together by least squares on the
#: relative error over ten training processes, one per application, at batches and inputs the check
#: set does not use (``benchmarks/results/2026-11-28-0851-epyc-memory-plan-calibration.json``: 1.1 to 2.5 GB
#: measured, 136 MB to 1.1 GB of live tensors, 443 to 29,440 ops; the fit then reads 0.89 to 1.10 of
#: the measured peaks). Resident bytes per byte of the simulated live tensors:
LIVE_FACTOR = 1.244
#: and resident bytes per op of the traced step.
BYTES_PER_OP = 37_292
#: :func:`plan_fastest` trains without rematerialisation only when that estimate is at most this share of the
#: limit: the estimate reads 0.89 to 1.10 of measured peaks, and other processes may take memory meanwhile.
NO_RECOMPUTE_SHARE = 0.75


_DECIMAL = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_BINARY = {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


class MemoryPlanError(ValueError):
    """The estimated peak memory of training exceeds the memory the process can use."""


# --- sizes ------------------------------------------------------------------------------------------


def parse_size(text: str) -> int:
    """Bytes of a size written with a unit: ``"8GB"`` -> 8,000,000,000, ``"512MiB"`` -> 536,870,912.

    Units: ``B``; decimal (SI) ``kB``/``KB``, ``MB``, ``GB``, ``TB`` (powers of 1000); binary (IEC)
    ``KiB``, ``MiB``, ``GiB``, ``TiB`` (powers of 1024). Letters in any case, an optional space, a
    decimal number (``"1.5GB"``); a bare number is bytes. A lone ``K``/``M``/``G``/``T`` is refused:
    tools disagree on whether it means powers of 1000 or 1024.

    Raises:
        ValueError: anything else, naming the text and the accepted forms.
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*", text) if isinstance(text, str) else None
    unit = match.group(2).upper() if match else None
    factor = None if unit is None else _DECIMAL.get(unit or "B", _BINARY.get(unit))
    if factor is None:
        errors.fail(
            "parse_size",
            "text",
            "a size such as '8GB' or '512MiB' (units B, kB, MB, GB, TB: powers of 1000; "
            "KiB, MiB, GiB, TiB: powers of 1024; a bare number is bytes)",
            text,
        )
    return round(float(match.group(1)) * factor)


def format_size(count: int) -> str:
    """``count`` bytes in decimal units, three significant figures: ``"31.2 GB"``, ``"512 MB"``, ``"900 B"``."""
    for unit in ("TB", "GB", "MB", "kB"):
        scale = _DECIMAL[unit.upper()]
        if abs(count) >= scale:
            value = count / scale
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    return f"{count} B"


# --- the weights and the optimizer's slots ---------------------------------------------------------


def optimizer_slots(optimizer) -> int:
    """Variables ``optimizer`` keeps per trainable weight: Adam 2, SGD with momentum 1, plain SGD 0.

    Counted on a copy built for one probe variable (a name or config dict as ``keras.optimizers.get``
    takes it: ``"sgd"`` is plain SGD, momentum 0).
    """
    import numpy as np

    optimizer = keras.optimizers.get(optimizer) if isinstance(optimizer, (str, dict)) else optimizer
    probe = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    variable = keras.Variable(np.zeros(7, "float32"), name="memory_plan_probe")
    probe.build([variable])
    return sum(1 for v in probe.variables if tuple(v.shape) == (7,))


def variables_bytes(variables) -> int:
    """The bytes of ``variables``' values (TensorFlow dtypes)."""
    import tensorflow as tf

    return sum(math.prod(v.shape) * tf.as_dtype(v.dtype).size for v in variables)


# --- the plan ---------------------------------------------------------------------------------------


def _shape_text(shape):
    """``(64, 64, 3)`` -> ``"64x64x3"``; several inputs joined by ``" + "``."""
    if shape and isinstance(shape[0], tuple):
        return " + ".join(map(_shape_text, shape))
    return "x".join(str(d) for d in shape)


@dataclasses.dataclass(frozen=True)
class TrainingPlan:
    """What one training step of a model at a batch size will take (:func:`estimate`); bytes throughout.

    Attributes:
        model_name: the model's ``name``.
        input_shape: one example's shape, ``(H, W, C)``; a tuple of shapes for a model with several inputs.
        batch_size: examples per step.
        optimizer: the optimizer's class name.
        parameters: weights of the model (``count_params()``).
        weights_bytes: the weights, trainable or not.
        optimizer_bytes: the optimizer's slots: ``optimizer_slots x`` the trainable weights' bytes.
        graph_bytes: the step's graph: ``BYTES_PER_OP x step_ops``.
        activation_bytes: ``LIVE_FACTOR x step_live_bytes``.
        votes_bytes: ``LIVE_FACTOR x`` the part of ``step_live_bytes`` made by routed capsule layers.
        baseline_bytes: the process before its model (:data:`PROCESS_BASELINE_BYTES`).
        step_live_bytes: the most bytes the step's tensors hold at once (activations kept for the backward
            pass, transients, gradients), from :func:`live_tensors`.
        step_ops: ops in the traced step.
        steps_per_epoch: optimizer steps per epoch, ``None`` when not given.
        recompute: whether the step was traced with the library's rematerialisation on
            (:func:`~keras_capsules.ops.remat.recomputation`): ``False`` keeps every routing temporary.
        reestimate: ``batch_size -> TrainingPlan`` for the same model and optimizer (what :func:`check`
            uses to verify the largest batch that fits); ``None`` for a plan made by hand.
    """

    model_name: str
    input_shape: tuple
    batch_size: int
    optimizer: str
    parameters: int
    weights_bytes: int
    optimizer_bytes: int
    graph_bytes: int
    activation_bytes: int
    votes_bytes: int
    baseline_bytes: int
    step_live_bytes: int
    step_ops: int
    steps_per_epoch: int | None = None
    recompute: bool = True
    reestimate: Callable[[int], "TrainingPlan"] | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def peak_bytes(self) -> int:
        """The estimated peak resident memory of the training process: the sum of the parts."""
        return (
            self.baseline_bytes + self.weights_bytes + self.optimizer_bytes + self.graph_bytes + self.activation_bytes
        )

    @property
    def fixed_bytes(self) -> int:
        """The part of :attr:`peak_bytes` that does not grow with the batch (all but the activations)."""
        return self.peak_bytes - self.activation_bytes

    def headline(self) -> str:
        """``model 'm' on 64x64x3 inputs at batch 16``."""
        return f"model {self.model_name!r} on {_shape_text(self.input_shape)} inputs at batch {self.batch_size}"

    def parts(self) -> str:
        """The estimate's parts in words, e.g. ``process baseline 795 MB, weights 6.29 MB, ...``."""
        votes = f", of which capsule votes {format_size(self.votes_bytes)}" if self.votes_bytes else ""
        return (
            f"process baseline {format_size(self.baseline_bytes)}, weights {format_size(self.weights_bytes)}, "
            f"optimizer state {format_size(self.optimizer_bytes)}, step graph {format_size(self.graph_bytes)}, "
            f"activations and gradients {format_size(self.activation_bytes)}{votes}"
        )

    def describe(self) -> str:
        """The plan as lines to print before training."""
        lines = [
            f"Training plan: {self.headline()}, {self.optimizer}",
            f"  parameters: {self.parameters:,}",
            f"  estimated peak memory: {format_size(self.peak_bytes)} ({self.parts()})",
        ]
        if self.steps_per_epoch is not None:
            lines.append(f"  steps per epoch: {self.steps_per_epoch:,}")
        if not self.recompute:
            lines.append("  rematerialisation: off (the step fits without it: nothing is computed twice)")
        return "\n".join(lines)


def estimate(
    model: keras.Model,
    batch_size: int,
    optimizer=None,
    steps_per_epoch: int | None = None,
    *,
    examples: int | None = None,
    label_shape: tuple = (),
    label_dtype: str = "int32",
    baseline_bytes: int | None = None,
    recompute: bool = True,
) -> TrainingPlan:
    """The :class:`TrainingPlan` of training ``model`` at ``batch_size`` (TensorFlow backend; no step runs).

    Args:
        model: a built Keras model with fixed input sizes (compiled as it will train, so that its loss,
            a reconstruction decoder's included, is traced; see the module docstring), or one built in
            :func:`~keras_capsules.training.shape_plan.from_shapes` (nothing allocated).
        batch_size: examples per step.
        optimizer: what trains it: an optimizer, a name or config for ``keras.optimizers.get`` (``"sgd"``
            is plain SGD); default the compiled model's, else ``"adam"``.
        steps_per_epoch: optimizer steps per epoch, or ``examples``: training examples per epoch
            (steps: ``ceil(examples / batch_size)``, recomputed at another batch).
        label_shape, label_dtype: one example's label for the compiled loss (default: a class index).
        baseline_bytes: the process before its model (default :data:`PROCESS_BASELINE_BYTES`).
        recompute: trace the step with the library's rematerialisation on (default) or off
            (:func:`~keras_capsules.ops.remat.recomputation`), as it will train.

    Raises:
        ValueError: a backend other than TensorFlow, or a model with open input sizes.
    """
    where = "memory_plan.estimate"
    if keras.backend.backend() != "tensorflow":
        errors.fail(
            where,
            "model",
            "a model of the TensorFlow backend (the estimate walks a traced TensorFlow graph)",
            f"backend {keras.backend.backend()!r}",
        )
    batch_size = errors.check_positive_int(where, "batch_size", batch_size)
    if steps_per_epoch is not None and examples is not None:
        errors.fail(where, "examples", "None when `steps_per_epoch` is given (one or the other)", examples)
    if optimizer is None:
        optimizer = getattr(model, "optimizer", None) or "adam"
    slots = optimizer_slots(optimizer)
    optimizer_name = type(keras.optimizers.get(optimizer) if isinstance(optimizer, (str, dict)) else optimizer).__name__
    # Routers that XLA compiles are traced plain: a compiled cluster is one op to the replay, its temporaries
    # unseen (see the module docstring).
    with routed_scope(routed_layers(model)), recomputation(recompute), router_compilation(False):
        operations, outputs = shape_plan.traced_step(model, batch_size, tuple(label_shape), label_dtype)
    live = live_tensors(operations, outputs)
    votes = sum(count for name, count in live.at_peak.items() if in_routed_scope(name))
    shapes = tuple(tuple(t.shape[1:]) for t in model.inputs)

    def at(other_batch):
        return estimate(
            model,
            other_batch,
            optimizer,
            steps_per_epoch,
            examples=examples,
            label_shape=label_shape,
            label_dtype=label_dtype,
            baseline_bytes=baseline_bytes,
            recompute=recompute,
        )

    return TrainingPlan(
        model_name=model.name,
        input_shape=shapes[0] if len(shapes) == 1 else shapes,
        batch_size=batch_size,
        optimizer=optimizer_name,
        parameters=int(model.count_params()),
        weights_bytes=variables_bytes(model.weights),
        optimizer_bytes=slots * variables_bytes(model.trainable_weights),
        graph_bytes=round(BYTES_PER_OP * live.ops),
        activation_bytes=round(LIVE_FACTOR * live.peak_bytes),
        votes_bytes=round(LIVE_FACTOR * votes),
        baseline_bytes=PROCESS_BASELINE_BYTES if baseline_bytes is None else int(baseline_bytes),
        step_live_bytes=live.peak_bytes,
        step_ops=live.ops,
        steps_per_epoch=steps_per_epoch if examples is None else -(-examples // batch_size),
        recompute=bool(recompute),
        reestimate=at,
    )


def _at_batch(plan, batch_size):
    """``plan`` at another batch: re-estimated where the plan can be, else scaled by the linear model."""
    if plan.reestimate is not None:
        return plan.reestimate(batch_size)
    scale = batch_size / plan.batch_size
    return dataclasses.replace(
        plan,
        batch_size=batch_size,
        activation_bytes=round(plan.activation_bytes * scale),
        votes_bytes=round(plan.votes_bytes * scale),
        step_live_bytes=round(plan.step_live_bytes * scale),
    )


def largest_batch(plan: TrainingPlan, limit_bytes: int, tries: int = 4) -> TrainingPlan | None:
    """The plan at the largest batch below ``plan.batch_size`` whose estimate fits in ``limit_bytes``; ``None`` when none does.

    Batches come from the linear model ``peak(b) = fixed + b * per_example``, first through ``plan``
    and its parts that do not grow with the batch (:attr:`TrainingPlan.fixed_bytes`), and each is
    verified by re-estimating the plan there; then through the two nearest estimates on either side
    of the limit (the two smallest failing ones while none fits), until the line names no batch
    between them, or after ``tries`` estimates. Exact after two estimates when the estimate is affine
    in the batch (activations plus a part that does not grow with it, such as the gradients).
    """
    fits, failing = None, [plan]  # failing: the estimates above the limit, smallest batch first
    intercept, slope = plan.fixed_bytes, plan.activation_bytes / plan.batch_size
    for _ in range(tries):
        low = fits.batch_size if fits is not None else 0
        guess = math.floor((limit_bytes - intercept) / slope) if slope > 0 else failing[0].batch_size - 1
        guess = min(guess, failing[0].batch_size - 1)
        if guess <= low:
            break
        found = _at_batch(plan, guess)
        if found.peak_bytes <= limit_bytes:
            fits = found
        else:
            failing.insert(0, found)
        first, second = (fits, failing[0]) if fits is not None else (failing[0], failing[1])
        slope = (second.peak_bytes - first.peak_bytes) / (second.batch_size - first.batch_size)
        intercept = first.peak_bytes - slope * first.batch_size
    return fits


def check(plan: TrainingPlan, limit_bytes: int | None = None) -> TrainingPlan:
    """Returns ``plan`` when its peak fits in ``limit_bytes`` (default :func:`available_bytes`), else raises.

    Raises:
        MemoryPlanError: naming the model, input shape and batch, the estimate and its parts, the limit and
            the largest batch that fits (:func:`largest_batch`), or that none does.
    """
    given = limit_bytes is not None
    limit = limit_bytes if given else available_bytes()
    if limit is None or plan.peak_bytes <= limit:
        return plan
    what = (
        f"the limit of {format_size(limit)}"
        if given
        else f"the {format_size(limit)} this process can use (memory_plan.available_bytes)"
    )
    best = largest_batch(plan, limit)
    advice = (
        f"The largest batch that fits is {best.batch_size} (about {format_size(best.peak_bytes)}); use a batch of at most "
        f"{best.batch_size}, a smaller input, or more memory."
        if best is not None
        else f"No batch fits, not even 1 (the parts that do not grow with the batch take {format_size(plan.fixed_bytes)}); use a smaller "
        f"model or input, or more memory."
    )
    raise MemoryPlanError(
        f"memory_plan.check: training {plan.headline()} needs about {format_size(plan.peak_bytes)} ({plan.parts()}), "
        f"more than {what}. {advice}"
    )


def plan_fastest(make_plan: Callable[[bool], TrainingPlan], limit_bytes: int | None = None) -> TrainingPlan:
    """The plan to train with: without rematerialisation when it fits with room to spare, else checked with it.

    Rematerialisation (``ConvCaps``' ``remat``, the kernel, LSTM and EM routers' recomputed iterations) saves
    memory for time: a ConsensusCapsNet MNIST step at batch 64 with the LSTM router keeps 2.5 GB with it and
    9.3 GB without, and takes 1.8x as long (``benchmarks/recompute.py``). Made from ``make_plan(False)`` when its peak is at most
    :data:`NO_RECOMPUTE_SHARE` of the limit, else ``check(make_plan(True), limit_bytes)``; with no limit known
    (:func:`available_bytes` is ``None`` and none given) always with rematerialisation.

    Args:
        make_plan: ``recompute -> TrainingPlan`` (:func:`estimate` with ``recompute``).
        limit_bytes: the memory training may use (default :func:`available_bytes`).

    Raises:
        MemoryPlanError: not even the plan with rematerialisation fits (:func:`check`).
    """
    limit = limit_bytes if limit_bytes is not None else available_bytes()
    if limit is not None:
        fast = make_plan(False)
        if fast.peak_bytes <= NO_RECOMPUTE_SHARE * limit:
            return fast
    return check(make_plan(True), limit_bytes)
