"""The ``Router`` contract shared by every routing algorithm."""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.ops.compile import compiled_reading, compiling_inference, routers_may_compile
from keras_capsules.ops.dtypes import LOW_PRECISION, dtype_max
from keras_capsules.ops.norms import MAGNITUDE_LIMIT, limit_magnitude
from keras_capsules.ops.quantize import quantize_uniform
from keras_capsules.ops.reductions import max_with_initial, min_with_initial


class Router(keras.layers.Layer):
    """Base class of all routers: votes in, parent capsules out.

    A router is a Keras layer called as ``router(votes, activations=None, training=None,
    return_coupling=False)``:

        votes        (batch, in_caps, out_caps, out_dim)   the vote of every child for every parent;
                                                           convolutional layers fold positions into batch
        activations  (batch, in_caps)                      optional child activations in [0, 1] (routers
                                                           that need them use ones when absent)
        returns      poses (batch, out_caps, out_dim), activations (batch, out_caps)
                     [+ coupling (batch, in_caps, out_caps) with return_coupling=True]

    The routing maths run in float32 whatever the compute dtype (weights included: routers do not
    autocast their variables), and the outputs are cast back to the votes' dtype (the compute dtype for
    integer votes) with saturation: a value beyond the dtype's largest finite value becomes that value,
    never ``inf``.

    A subclass implements ``route(votes, activations, training)`` on float32 tensors, returning
    ``(poses, activations, coupling)``, creates its weights in ``build_router(votes_shape)``, and calls
    ``self.finalize_coupling(c, training)`` on the last iteration's coupling before it weights the votes.
    A router that iterates on parent-major votes ``(batch, out_caps, in_caps, out_dim)`` implements
    ``route_parent_major`` instead and sets ``accepts_parent_major``; its ``call`` then also takes
    ``votes_layout="parent_major"``, which saves capsule layers a transpose of the votes. Class attributes
    declare what a router can do: ``pose_kinds``, ``iterative``, ``supports_initial_poses`` and
    ``accepts_child_grid`` (which ``routing.available`` filters on), ``accepts_parent_major``,
    ``accepts_vote_sums`` and ``compiles_in_training``; the defaults fit a router that only implements
    ``route``.

    Args:
        iterations: routing iterations; single-pass routers (``iterative = False``) require 1.
            Defaults to 3.
        quantize_levels: ``None``, or ``K >= 2`` to snap the last iteration's coupling at inference with
            REM's uniform quantiser (docs/reference/rem.md#quantiser). Defaults to ``None``.
        jit_compile: route training calls on the TensorFlow backend through XLA, inside the ordinary
            step: ``True``, ``False``, or ``None`` for the router's measured default
            (``compiles_in_training``). Inference compiles only inside
            :func:`~keras_capsules.ops.compile.compiled_inference` (an attack's gradients), so exports
            trace the plain graph.
            Defaults to ``None``.
        **kwargs: the ``keras.layers.Layer`` arguments.

    Example:
        >>> class MeanRouter(Router):  # every child splits itself evenly over the parents
        ...     def route(self, votes, activations, training):
        ...         coupling = self.finalize_coupling(ops.ones_like(votes[..., 0]) / votes.shape[2], training)
        ...         poses = ops.einsum("bio,biod->bod", coupling, votes)
        ...         return poses, safe_norm(poses), coupling
        >>> poses, lengths = MeanRouter(iterations=1)(keras.random.normal((8, 32, 10, 16)))  # (8, 10, 16), (8, 10)

    See the routers guide (docs/routers/index.md, docs/routers/custom.md) for the contract, the
    capabilities and a worked custom router, and the routers reference
    (docs/reference/routers.md#compilation-jit_compile) for compilation.
    """

    router_name = None
    #: The pose kinds (a capsule layer's ``transform``) whose votes this router routes.
    pose_kinds = ("vector", "matrix")
    #: Whether this router supports more than one iteration.
    iterative = True
    #: Whether ``call`` takes ``initial_poses``, ``steps`` and ``finalize`` (concurrent routing).
    supports_initial_poses = False
    #: Whether the constructor takes a convolutional layer's ``child_grid``, ``kernel_size``, ``strides`` and ``padding``.
    accepts_child_grid = False
    #: Whether ``call`` accepts ``votes_layout="parent_major"`` (the router implements ``route_parent_major``).
    accepts_parent_major = False
    #: Whether a single uniform pass can be made from the votes' sums over the children (``route_vote_sums``).
    accepts_vote_sums = False
    #: Whether training calls run through XLA when ``jit_compile`` is ``None`` (TensorFlow backend).
    compiles_in_training = False
    #: The axis over which the coupling of ``return_coupling=True`` sums to 1: ``"parents"`` (each child splits
    #: itself over the parents, as REM's parse trees assume) or ``"children"`` (each parent's weights over its
    #: children: FM agreement, kernel and LSTM routing).
    coupling_sums_over = "parents"

    def __init__(self, iterations=3, quantize_levels=None, jit_compile=None, **kwargs):
        # Routing weights are read in float32 (no mixed-precision autocast to float16).
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        iterations = errors.check_positive_int(self, "iterations", iterations)
        if not self.iterative and iterations != 1:
            errors.fail(self, "iterations", "1 (this router makes a single pass)", iterations)
        if quantize_levels is not None:
            quantize_levels = errors.check_positive_int(self, "quantize_levels", quantize_levels, minimum=2)
        if jit_compile is not None and not isinstance(jit_compile, bool):
            errors.fail(self, "jit_compile", "None, True or False", jit_compile, TypeError)
        self.iterations = iterations
        self.quantize_levels = quantize_levels
        self.jit_compile = jit_compile

    def build(self, votes_shape, activations_shape=None):
        self.check_votes_shape(votes_shape)
        self.build_router(tuple(votes_shape))
        self.built = True

    def build_router(self, votes_shape):
        """Creates the router's weights, if any, from ``(batch, in_caps, out_caps, out_dim)``."""

    def check_votes_shape(self, votes_shape):
        errors.check_rank(self, "votes", votes_shape, 4, "(batch, in_caps, out_caps, out_dim)")

    def call(self, votes, activations=None, training=None, return_coupling=False, votes_layout="child_major"):
        dtype = self.output_dtype(votes)
        votes32 = ops.cast(votes, "float32")
        acts32 = None if activations is None else ops.cast(activations, "float32")
        route = self.route_parent_major if self.check_votes_layout(votes_layout) == "parent_major" else self.route
        if self.compiles(training):
            outputs = compiled_reading(lambda v, a: route(v, a, training), self.weights)(votes32, acts32)
        else:
            outputs = route(votes32, acts32, training)
        return tuple(saturating_cast(x, dtype) for x in outputs[: 3 if return_coupling else 2])

    def compiles(self, training):
        """Whether a call with this ``training`` flag routes through XLA (see ``jit_compile``)."""
        enabled = self.compiles_in_training if self.jit_compile is None else self.jit_compile
        in_scope = training is True or compiling_inference()
        return enabled and in_scope and routers_may_compile() and keras.backend.backend() == "tensorflow"

    def check_votes_layout(self, votes_layout):
        """Validates the ``votes_layout`` call argument: ``"child_major"``, or ``"parent_major"`` where accepted."""
        layouts = ("child_major", "parent_major") if self.accepts_parent_major else ("child_major",)
        return errors.check_one_of(self, "votes_layout", votes_layout, layouts)

    def output_dtype(self, votes):
        """The dtype of the outputs: the votes' float dtype, or the compute dtype for integer votes."""
        dtype = keras.backend.standardize_dtype(votes.dtype)
        return dtype if keras.backend.is_float_dtype(dtype) else self.compute_dtype

    def route(self, votes, activations, training):
        if self.accepts_parent_major:
            return self.route_parent_major(parent_major(votes), activations, training)
        raise NotImplementedError(f"{type(self).__name__} must implement route().")

    def route_parent_major(self, votes, activations, training):
        """``route`` on parent-major votes ``(batch, out_caps, in_caps, out_dim)`` (routers with ``accepts_parent_major``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement route_parent_major().")

    def finalize_coupling(self, coupling, training):
        """Applies REM quantisation to the last iteration's coupling at inference, if configured."""
        if self.quantize_levels is None or training:
            return coupling
        return quantize_uniform(coupling, self.quantize_levels)

    def get_config(self):
        config = super().get_config()
        config.update(
            {"iterations": self.iterations, "quantize_levels": self.quantize_levels, "jit_compile": self.jit_compile}
        )
        return config


def saturating_cast(x, dtype):
    """``cast(x, dtype)`` that clips to the target's finite range first (no ``inf`` from a narrowing cast)."""
    dtype = keras.backend.standardize_dtype(dtype)
    if dtype in LOW_PRECISION and keras.backend.standardize_dtype(x.dtype) == "float32":
        limit = dtype_max(dtype)
        x = ops.clip(x, -limit, limit)
    return ops.cast(x, dtype)


def limit_votes(votes, limit=MAGNITUDE_LIMIT):
    """Scales each example's votes ``(batch, in, out, d)`` by one factor so that ``max|votes| <= limit``.

    Agreements are products of votes (``u . v``, ``u . sum u``) and overflow float32 beyond ~1e19;
    scaling by a per-example constant (gradient-free) keeps every direction and only saturates
    logits that are already astronomically large, so the routing is correct in the limit. Votes
    within ``limit`` are returned unchanged (bit for bit).
    """
    if keras.backend.standardize_dtype(votes.dtype) == "float16":
        return limit_magnitude(votes, axis=(1, 2, 3), limit=limit)  # unchanged: float16 ends at 65504
    # max|votes| (at least ``limit``) from the largest and the smallest vote: two reductions that only read
    # the votes, where ``max(abs(votes))`` (limit_magnitude) also writes a vote-sized |votes| (3-5x slower
    # on ConsensusCapsNet's 28 MB rows at 64x64x3; 6-10 % of its training step). The same value, bit for bit.
    top = max_with_initial(votes, limit, axis=(1, 2, 3), keepdims=True)
    bottom = min_with_initial(votes, -limit, axis=(1, 2, 3), keepdims=True)
    peak = ops.stop_gradient(ops.maximum(top, -bottom))
    return ops.multiply(votes, limit / peak)


def parent_major(votes):
    """``(batch, in_caps, out_caps, dim)`` -> ``(batch, out_caps, in_caps, dim)``.

    Routers iterate in this layout: the per-iteration weighted sums ``sum_i c_ij u_j|i`` and agreements
    ``u_j|i . v_j`` then become batched matrix products with no transposes (several times faster on
    CPU than contracting over the middle axis of the contract layout). One transpose per call.
    """
    return ops.transpose(votes, (0, 2, 1, 3))


def weighted_votes(coupling, votes):
    """``sum_i c_ij u_j|i``: coupling ``(batch, out, in)`` and parent-major votes ``(batch, out, in, d)`` -> ``(batch, out, d)``.

    A batched ``(1, in) @ (in, d)`` product per example and parent. The same numbers as
    ``einsum("boi,boid->bod")``, which TensorFlow's CPU kernels run (with its gradient) about 1.5x slower
    at CapsNet's shapes (votes of 128 x 10 x 1152 x 16).
    """
    return ops.squeeze(ops.matmul(ops.expand_dims(coupling, 2), votes), axis=2)


def vote_agreement(votes, poses):
    """``u_j|i . v_j``: parent-major votes ``(batch, out, in, d)`` and poses ``(batch, out, d)`` -> ``(batch, out, in)``.

    A batched ``(in, d) @ (d, 1)`` product per example and parent (``einsum("boid,bod->boi")``; see
    :func:`weighted_votes`).
    """
    return ops.squeeze(ops.matmul(votes, ops.expand_dims(poses, -1)), axis=-1)


def coupling_full(votes, value):
    """``(batch, out_caps, in_caps)`` filled with ``value`` for parent-major ``votes``, made from their shape only.

    (``zeros_like(votes[..., 0])`` would slice the votes: a strided read of the whole tensor.)
    """
    return ops.full((ops.shape(votes)[0],) + tuple(votes.shape[1:3]), value, dtype=votes.dtype)


def child_major(coupling):
    """``(batch, out_caps, in_caps)`` -> the contract layout ``(batch, in_caps, out_caps)``."""
    return ops.transpose(coupling, (0, 2, 1))


def stack_position_chunks(x, positions, chunks):
    """``(batch * positions, ...)`` -> ``(chunks, batch * positions / chunks, ...)``: equal chunks of consecutive positions, stacked.

    ``x`` holds the positions of each example folded into the batch (example-major, positions in
    row-major order); chunk ``c`` holds positions ``c * P_c .. (c + 1) * P_c - 1`` of every example,
    ``P_c = positions / chunks``: the layout a loop over position chunks
    (:func:`~keras_capsules.ops.sequential.map_in_turn`) takes one chunk at a time from.
    """
    trailing = tuple(x.shape[1:])
    grid = ops.reshape(x, (-1, chunks, positions // chunks) + trailing)
    return ops.reshape(ops.moveaxis(grid, 1, 0), (chunks, -1) + trailing)


def unstack_position_chunks(x, per_chunk):
    """The inverse of :func:`stack_position_chunks`: ``(chunks, batch * per_chunk, ...)`` -> ``(batch * positions, ...)``."""
    chunks, trailing = x.shape[0], tuple(x.shape[2:])
    grid = ops.reshape(x, (chunks, -1, per_chunk) + trailing)
    return ops.reshape(ops.moveaxis(grid, 0, 1), (-1,) + trailing)


def ones_activations(votes, in_axis=1):
    """Child activations of ones, ``(batch, in_caps)``, for routers used without activations.

    Made from the votes' shape (no slice of the votes); ``in_axis`` is the children's axis: 1 in the
    contract layout, 2 in the parent-major one.
    """
    return ops.ones((ops.shape(votes)[0], votes.shape[in_axis]), dtype=votes.dtype)
