"""The ``Router`` contract shared by every routing algorithm."""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.ops.compile import compiled_reading
from keras_capsules.ops.dtypes import LOW_PRECISION, dtype_max
from keras_capsules.ops.norms import MAGNITUDE_LIMIT, limit_magnitude
from keras_capsules.ops.quantize import quantize_uniform


class Router(keras.layers.Layer):
    """Base class of all routers: votes in, parent capsules out.

    Call signature::

        router(votes, activations=None, training=None, return_coupling=False)

    Args (call):
        votes: ``(batch, in_caps, out_caps, out_dim)``, the vote of every child for every parent.
            Convolutional capsule layers fold output positions into ``batch``.
        activations: optional ``(batch, in_caps)`` child activations in [0, 1]; routers that do not
            use them ignore them, routers that need them (EM, kernel, LSTM) use ones when absent.
        training: Keras training flag.
        return_coupling: also return the coupling coefficients.

    Returns:
        ``(poses, activations)`` with poses ``(batch, out_caps, out_dim)`` and activations
        ``(batch, out_caps)``, plus coupling ``(batch, in_caps, out_caps)`` when ``return_coupling``.

    Numerical safeguard shared by all routers: the routing maths run in float32 (weights included:
    routers do not autocast their variables under a mixed-precision policy) whatever the layer's
    compute dtype (float16 and bfloat16 overflow in the squared norms and softmaxes of routing), and
    the outputs are cast back to the input dtype (integer votes: the router's compute dtype) with
    saturation: a value beyond the dtype's largest finite value (e.g. a float32 vote mean above
    float16's 65504) becomes that value, never ``inf``.

    Args (constructor):
        iterations: number of routing iterations (routers with a single pass validate it is 1).
        quantize_levels: ``None`` or ``K >= 2``. At inference (``training`` false), the coupling
            coefficients of the last iteration are snapped by REM's uniform quantiser ``q_K``
            (docs/reference/rem.md#quantiser) before they weight the votes.
        jit_compile: ``None`` (the router's default), ``True`` or ``False``: route training calls
            through XLA (see Compilation below).

    Subclasses implement ``route(votes, activations, training)`` on float32 tensors and return
    ``(poses, activations, coupling)``; they call ``self.finalize_coupling(c, training)`` on the
    coupling of the last iteration before it weights the votes. Routers that iterate in the
    parent-major layout implement ``route_parent_major`` instead (same arguments, votes
    ``(batch, out_caps, in_caps, out_dim)``) and set ``accepts_parent_major``: their ``call`` then
    also takes ``votes_layout="parent_major"``, which lets a capsule layer whose vote transform can
    write that layout (``VectorVotes``, ``MatrixVotes``) skip a transpose of the votes
    forward and backward.

    Compilation: ``jit_compile`` routes a training call through XLA as one unit inside the ordinary
    step (:func:`~keras_capsules.ops.compile.compiled_reading`; TensorFlow backend only, JAX compiles
    the whole step already). ``None`` takes the router's measured default, ``compiles_in_training``:
    on where the applications' training steps were measured faster with it (dynamic and kernel routing),
    off elsewhere (EM: no faster inside MatrixCapsNet's step, whose first step it slows by compiling;
    see docs/performance.md).
    Inference never compiles, so SavedModel, ONNX and LiteRT exports trace the plain graph.

    Capabilities: each router class declares what it can do as class attributes, which
    :func:`keras_capsules.routing.available` filters on and the layers and applications check. The
    defaults fit a router that only implements ``route``: it routes vector and matrix poses (matrix
    poses reach a router flattened, ``p*p`` entries), iterates, and takes no initial poses or layer
    geometry.

    - ``pose_kinds`` (filter ``pose=``): the poses whose votes it routes, ``"vector"`` and/or
      ``"matrix"`` (a capsule layer's ``transform``); restrict it if the router relies on one kind.
    - ``iterative`` (filter ``iterative=``): ``False`` for a single pass (``iterations`` must be 1).
    - ``supports_initial_poses`` (filter ``initial_poses=``): ``call`` takes ``initial_poses``,
      ``steps`` and ``finalize``, as :class:`~keras_capsules.layers.ConcurrentRouting` needs.
    - ``accepts_child_grid`` (filter ``child_grid=``): the constructor takes a convolutional layer's
      geometry (``child_grid``, ``kernel_size``, ``strides``, ``padding``) to normalise each child's
      coupling over every parent it feeds across positions (EM).
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
        return enabled and training is True and keras.backend.backend() == "tensorflow"

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
    top = ops.max(votes, axis=(1, 2, 3), keepdims=True, initial=limit)
    bottom = ops.min(votes, axis=(1, 2, 3), keepdims=True, initial=-limit)
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
