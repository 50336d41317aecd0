"""EM routing of matrix capsules (Hinton, Sabour & Frosst 2018), as IBM implements it (docs/reference/routers.md#em-routing)."""

import math

import keras
import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.ops.compile import compiled_reading
from keras_capsules.ops.norms import clip_magnitude
from keras_capsules.ops.remat import remat_reading
from keras_capsules.ops.sequential import map_in_turn
from keras_capsules.routing.base import (
    LOW_PRECISION,
    Router,
    child_major,
    coupling_full,
    dtype_max,
    ones_activations,
    saturating_cast,
    stack_position_chunks,
    unstack_position_chunks,
    vote_agreement,
    weighted_votes,
)
from keras_capsules.routing.positions import CrossPositionRouting
from keras_capsules.routing.registry import register_router


def clip_gradient(x, limit):
    """Identity whose gradient is clipped to ``[-limit, limit]`` (``keras.ops.custom_gradient``)."""

    @ops.custom_gradient
    def identity(value):
        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            return ops.clip(upstream, -limit, limit)

        return value, grad

    return identity(x)


def inverse_temperatures(iterations, final_lambda=0.01):
    """IBM's schedule ``lambda_t = final_lambda * (1 - 0.95 ** (t + 1))``, ``t = 0 .. iterations - 1``.

    With ``final_lambda=0.01``: 5.0e-4, 9.75e-4, 1.426e-3 (the authors' OpenReview reply).
    """
    return [final_lambda * (1.0 - 0.95 ** (t + 1)) for t in range(iterations)]


@register_router("em")
class EMRouter(CrossPositionRouting, Router):
    """EM routing between matrix capsules (Hinton, Sabour & Frosst 2018), following IBM's re-implementation.

    Each parent is a Gaussian over its votes, fitted to the children assigned to it and weighted by their
    activations; the assignments ``R`` (uniform at first) are then updated from how well each parent's
    Gaussian explains each vote. With votes ``V`` ``(batch, in_caps, out_caps, d)`` (flattened ``p x p``
    votes; any ``d``) and child activations ``a`` ``(batch, in_caps)`` (ones when absent), for
    ``t = 0 .. iterations - 1``:

        M-step  R' = R a;  mu_j, var_j = R'-weighted mean and variance (+ variance_floor) of V_.j  (batch, out_caps, d)
                a_j = sigmoid(lambda_t (beta_a_j - sum_h (beta_u_j + log(var_jh) / 2) sum_i R'_ij F))
        E-step  R_ij = softmax over the parents j of (log(a_j + epsilon) + log N(V_ij; mu_j, var_j))
                (skipped after the last M-step)

    with ``lambda_t = final_lambda (1 - 0.95 ** (t + 1))`` and ``F = 100 out_caps / in_caps`` (IBM's
    normalisation of the amount of data). The outputs are the means ``mu``, the activation probabilities
    ``a_j`` ``(batch, out_caps)`` and, on request, the coupling ``R`` of the last M-step. The weights are
    ``beta_a`` and ``beta_u`` (IBM's ``beta_v``), one per output type.

    Convolutional layers fold the output positions into the batch, so by default a child is normalised
    over the parent types at one position. Given the layer's geometry (``child_grid`` and the rest), the
    router takes ``votes`` ``(batch * H_out * W_out, K*K*types, out_caps, d)`` exactly as
    :class:`~keras_capsules.layers.ConvCaps` makes them and normalises each child over every parent
    position and type it feeds, as the paper and IBM do (IBM's ``spatial_routing_matrix``); ``ConvCaps``
    with ``remat`` then routes position chunk by chunk (:meth:`route_position_chunks`) and never forms
    the whole vote tensor.

    Args:
        iterations: EM iterations. Defaults to 3 (the paper; IBM's best smallNORB run used 2).
        final_lambda: the final inverse temperature. Defaults to 0.01.
        epsilon: in the M-step denominators and in ``log(a_j + epsilon)``. Defaults to 1e-9.
        variance_floor: added to every variance. Defaults to 1e-9.
        normalize_cost: multiply the cost by ``F``. Defaults to ``True`` (``False``: the paper's cost).
        max_vote: votes are clipped to ``+-max_vote`` before routing, with a gradient that passes straight
            through (:func:`~keras_capsules.ops.norms.clip_magnitude`); ``None`` disables the clip.
            Defaults to 1e4.
        beta_a_initializer: ``None`` for IBM's TruncatedNormal(mean -1000, std 500), or any initializer.
        beta_u_initializer: ``None`` for IBM's TF1 Xavier initializer, which is Glorot uniform over its
            ``(1, 1, 1, 1, out_caps, 1)`` variable, ``U(+-sqrt(6 / (out_caps + 1)))``; or any initializer.
        child_grid: ``None``, or the ``(H, W)`` input grid of the convolutional layer to normalise across
            positions. Defaults to ``None`` (fully connected layers need nothing else).
        kernel_size, strides, padding: that layer's geometry, used with ``child_grid`` only. Default to
            1, 1 and ``"valid"``.
        **kwargs: ``quantize_levels``, ``jit_compile`` (see :class:`Router`) and the
            ``keras.layers.Layer`` arguments.

    Example:
        >>> router = EMRouter(iterations=2)
        >>> votes, activations = keras.random.normal((4, 72, 5, 16)), keras.random.uniform((4, 72))
        >>> poses, out_activations = router(votes, activations)  # (4, 5, 16), (4, 5)

    See the routers reference (docs/reference/routers.md#em-routing) and docs/routers/em.md for the
    numerical safeguards and the differences from IBM's code.
    """

    accepts_parent_major = True

    def __init__(
        self,
        iterations=3,
        final_lambda=0.01,
        epsilon=1e-9,
        variance_floor=1e-9,
        normalize_cost=True,
        max_vote=1e4,
        beta_a_initializer=None,
        beta_u_initializer=None,
        child_grid=None,
        kernel_size=1,
        strides=1,
        padding="valid",
        **kwargs,
    ):
        super().__init__(iterations=iterations, **kwargs)
        self.final_lambda = float(final_lambda)
        self.epsilon = float(epsilon)
        self.variance_floor = float(variance_floor)
        if self.variance_floor <= 0:
            errors.fail(self, "variance_floor", "a positive float", variance_floor)
        self.normalize_cost = bool(normalize_cost)
        if max_vote is not None and not float(max_vote) > 0:
            errors.fail(self, "max_vote", "None or a positive float", max_vote)
        self.max_vote = None if max_vote is None else float(max_vote)
        self.beta_a_initializer = beta_a_initializer
        self.beta_u_initializer = beta_u_initializer
        self.init_child_grid(child_grid, kernel_size, strides, padding)
        self._gradient_limit = None

    def build_router(self, votes_shape):
        _, in_caps, out_caps, out_dim = votes_shape
        if in_caps is None or out_caps is None or out_dim is None:
            errors.fail(self, "votes", "known in_caps, out_caps and out_dim", f"shape {tuple(votes_shape)}")
        beta_a_init = self.beta_a_initializer
        if beta_a_init is None:
            beta_a_init = keras.initializers.TruncatedNormal(mean=-1000.0, stddev=500.0)
        beta_u_init = self.beta_u_initializer
        if beta_u_init is None:
            limit = math.sqrt(6.0 / (out_caps + 1))
            beta_u_init = keras.initializers.RandomUniform(-limit, limit)
        self.beta_a = self.add_weight(name="beta_a", shape=(out_caps,), initializer=beta_a_init)
        self.beta_u = self.add_weight(name="beta_u", shape=(out_caps,), initializer=beta_u_init)
        self.cost_factor = 100.0 * out_caps / in_caps if self.normalize_cost else 1.0
        self.build_child_grid(votes_shape)

    # ---- the two steps, in the parent-major layout (batch, out, in[, dim]) of base.parent_major ----

    def _m_step(self, coupling, votes, activations, inverse_temperature):
        """M-step: ``coupling`` ``(batch, out, in)``, ``votes`` ``(batch, out, in, d)``, ``activations`` ``(batch, in)``.

        Returns ``(mean, variance, out_acts, spread)``: ``(batch, out, d)`` twice, ``(batch, out)`` and
        ``(V - mu)^2`` ``(batch, out, in, d)`` (reused by the E-step, which needs the same ``mu``).
        """
        weighted = coupling * activations[:, None, :]  # R'
        mass = ops.sum(weighted, axis=2)  # (batch, out)
        denominator = (mass + self.epsilon)[:, :, None]
        mean = weighted_votes(weighted, votes) / denominator
        spread = ops.square(votes - mean[:, :, None])
        variance = weighted_votes(weighted, spread) / denominator + self.variance_floor
        beta_u = ops.cast(self.beta_u, "float32")[None, :, None]
        cost = ops.sum((beta_u + 0.5 * ops.log(variance)) * mass[:, :, None], axis=-1) * self.cost_factor
        beta_a = ops.cast(self.beta_a, "float32")[None, :]
        out_acts = ops.sigmoid(inverse_temperature * (beta_a - cost))
        return mean, variance, out_acts, spread

    def _log_assignments(self, spread, variance, out_acts):
        """``log(a_j + eps) + log p_ij``, ``(batch, out, in)``, from the M-step's ``(V - mu)^2``."""
        distance = vote_agreement(spread, 0.5 / variance)
        log_norm = 0.5 * ops.sum(ops.log(2.0 * math.pi * variance), axis=-1)  # (batch, out): no child index
        return (ops.log(out_acts + self.epsilon) - log_norm)[:, :, None] - distance

    def _initial_scale(self):
        """IBM's ``1 / parents_per_child`` of every (output position, child) slot, NumPy ``(P, K*K*types)`` (``child_grid`` only)."""
        _, _, parents = self._tables
        kk = self.kernel_size * self.kernel_size
        return np.repeat(1.0 / parents.reshape(self.num_positions, kk), self.child_types, axis=1).astype("float32")

    def _initial_coupling(self, votes, scale=None):
        """``R`` before the first M-step, ``(batch, out, in)`` for parent-major ``votes``.

        With ``child_grid``, ``votes`` hold ``P_c`` output positions of every example folded into the
        batch and ``scale`` is their ``(P_c, in)`` rows of :meth:`_initial_scale` (``None``: every position).
        """
        out_caps = votes.shape[1]
        uniform = coupling_full(votes, 1.0 / out_caps)
        if self._tables is None:
            return uniform
        if scale is None:
            scale = ops.convert_to_tensor(self._initial_scale())
        rows = ops.reshape(uniform, (-1, scale.shape[0], out_caps, scale.shape[1]))
        rows = rows * ops.expand_dims(ops.expand_dims(scale, 0), 2)
        return ops.reshape(rows, (-1,) + tuple(uniform.shape[1:]))

    def call(self, votes, activations=None, training=None, return_coupling=False, votes_layout="child_major"):
        # Remember the caller's precision: route() sees float32 copies (base class).
        dtype = keras.backend.standardize_dtype(votes.dtype)
        self._gradient_limit = dtype_max(dtype) if dtype in LOW_PRECISION else None
        return super().call(
            votes, activations, training=training, return_coupling=return_coupling, votes_layout=votes_layout
        )

    def _safeguarded(self, votes, activations):
        """Parent-major float32 ``votes`` and ``activations`` (ones when ``None``) with the safeguards applied."""
        if self._gradient_limit is not None:
            votes = clip_gradient(votes, self._gradient_limit)
            activations = None if activations is None else clip_gradient(activations, self._gradient_limit)
        if self.max_vote is not None:
            votes = clip_magnitude(votes, self.max_vote)
        if activations is None:
            activations = ones_activations(votes, in_axis=2)
        return votes, activations

    def route_parent_major(self, votes, activations, training):
        votes, activations = self._safeguarded(votes, activations)
        coupling = self._initial_coupling(votes)
        temperatures = inverse_temperatures(self.iterations, self.final_lambda)
        for step, inverse_temperature in enumerate(temperatures):
            last = step == self.iterations - 1
            if last:
                coupling = self.finalize_coupling(coupling, training)
            mean, variance, out_acts, spread = self._m_step(coupling, votes, activations, inverse_temperature)
            if not last:
                coupling = self.parent_softmax(self._log_assignments(spread, variance, out_acts))
        return mean, out_acts, child_major(coupling)

    def route_position_chunks(
        self, inputs, votes_of, variables, dtype, training=None, return_coupling=False, remat=False
    ):
        """Cross-position routing (``child_grid``) of a convolutional layer whose votes come chunk by chunk.

        The same routing as :meth:`call` on the layer's whole vote tensor ``(batch * P, K*K*types,
        out_caps, out_dim)`` (to float32 rounding), without ever forming it: every iteration makes each
        chunk's votes again from its children (``votes_of``) and runs the chunk's M-step and, except in
        the last iteration, its E-step logits ``(batch * P_c, out, in)``; only the E-step's normaliser,
        which couples the positions, sees them all, on those coupling-sized logits. The chunks take
        turns (:func:`~keras_capsules.ops.sequential.map_in_turn`). With ``remat`` (training) they go
        through a loop traced once per iteration, whatever their number, and each chunk step and the
        normaliser are rematerialised: the backward pass recomputes a chunk's votes, so what a training
        step keeps between iterations is coupling-sized, never vote-sized. Without it (inference) the
        chunks are unrolled, a graph without loops that the ONNX and LiteRT converters take. The price: the votes are computed
        once per iteration (and again in the backward pass) instead of once.

        Args:
            inputs: the tensors ``votes_of`` takes, each ``(chunks, batch * P_c, ...)``: equal chunks
                of ``P_c`` consecutive output positions (row-major) covering the layer's ``P`` once,
                stacked (:func:`~keras_capsules.routing.base.stack_position_chunks`).
            votes_of: ``votes_of(*chunk_inputs)`` -> ``(votes, activations)``: the chunk's parent-major votes
                ``(batch * P_c, out_caps, in_caps, out_dim)`` and child activations ``(batch * P_c, in_caps)``
                or ``None`` (ones).
            variables: the Keras variables ``votes_of`` and this router read (the layer's weights):
                with ``remat`` they enter the recomputed steps as values
                (:func:`~keras_capsules.ops.remat.remat_reading`).
            dtype: the votes' dtype, which the outputs take (as :meth:`call`'s).
            remat: rematerialise the chunk steps in the backward pass.

        Returns:
            As :meth:`call`: ``(poses, activations[, coupling])``, positions folded into the batch.
        """
        if getattr(self, "_tables", None) is None:
            errors.fail(
                self,
                "child_grid",
                "a convolutional layer's input grid (and the router built) for route_position_chunks",
                self.child_grid,
            )
        chunks = inputs[0].shape[0]
        if self.num_positions % chunks:
            errors.fail(
                self,
                "inputs",
                f"chunks that divide the layer's {self.num_positions} output positions",
                f"{chunks} chunks",
            )
        per_chunk = self.num_positions // chunks
        dtype = keras.backend.standardize_dtype(dtype)
        self._gradient_limit = dtype_max(dtype) if dtype in LOW_PRECISION else None
        temperatures = inverse_temperatures(self.iterations, self.final_lambda)
        normalizers = self._chunk_normalizers
        if self.compiles(training):
            normalizers = compiled_reading(normalizers, [])
        normalizers = keras.remat(normalizers) if remat else normalizers
        state = (ops.reshape(ops.convert_to_tensor(self._initial_scale()), (chunks, per_chunk, -1)),)
        for step, inverse_temperature in enumerate(temperatures):
            last = step == self.iterations - 1
            chunk_step = self._chunk_step(votes_of, len(inputs), inverse_temperature, last, training, return_coupling)
            if remat:
                chunk_step = remat_reading(chunk_step, variables)
            outputs = map_in_turn(lambda chunk: chunk_step(*chunk), tuple(inputs) + state, unrolled=not remat)
            if not last:
                state = (outputs, normalizers(outputs))
        results = [unstack_position_chunks(x, per_chunk) for x in outputs]
        if return_coupling:
            results[2] = child_major(results[2])
        return tuple(saturating_cast(x, dtype) for x in results)

    def _chunk_step(self, votes_of, num_inputs, inverse_temperature, last, training, return_coupling):
        """One iteration on one chunk: ``step(*inputs, scale)`` in the first iteration, ``step(*inputs, logits,
        log_normalizer)`` after it -> its E-step logits, or in the last iteration ``(mean, out_acts[, coupling])``
        (see :meth:`route_position_chunks`). The routing part compiles with XLA in training (``jit_compile``);
        the votes do not: XLA's CPU products of 4x4 pose matrices are slower than the plain graph's."""

        def route(votes, activations, *state):
            votes, activations = self._safeguarded(votes, activations)
            coupling = ops.exp(state[0] - state[1]) if len(state) == 2 else self._initial_coupling(votes, state[0])
            if last:
                coupling = self.finalize_coupling(coupling, training)
            mean, variance, out_acts, spread = self._m_step(coupling, votes, activations, inverse_temperature)
            if last:
                return (mean, out_acts, coupling) if return_coupling else (mean, out_acts)
            return self._log_assignments(spread, variance, out_acts)

        if self.compiles(training):
            route = compiled_reading(route, self.weights)

        def step(*tensors):
            inputs, state = tensors[:num_inputs], tensors[num_inputs:]
            votes, activations = votes_of(*inputs)
            activations = None if activations is None else ops.cast(activations, "float32")
            return route(ops.cast(votes, "float32"), activations, *state)

        return step

    def _chunk_normalizers(self, logits):
        """The E-step's log normaliser ``(chunks, batch * P_c, 1, in)`` from the stacked chunks' logits ``(chunks, batch * P_c, out, in)``."""
        chunks, per_chunk = logits.shape[0], self.num_positions // logits.shape[0]
        normalizer = self.spatial_log_normalizer(unstack_position_chunks(logits, per_chunk))
        return stack_position_chunks(normalizer, self.num_positions, chunks)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "final_lambda": self.final_lambda,
                "epsilon": self.epsilon,
                "variance_floor": self.variance_floor,
                "normalize_cost": self.normalize_cost,
                "max_vote": self.max_vote,
                "beta_a_initializer": _serialize_initializer(self.beta_a_initializer),
                "beta_u_initializer": _serialize_initializer(self.beta_u_initializer),
                **self.child_grid_config(),
            }
        )
        return config


def _serialize_initializer(initializer):
    if initializer is None or isinstance(initializer, (str, dict)):
        return initializer
    return keras.initializers.serialize(initializer)
