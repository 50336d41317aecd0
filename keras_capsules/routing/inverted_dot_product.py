"""Inverted dot-product attention routing (Tsai, Srivastava, Goh & Salakhutdinov, ICLR 2020; docs/reference/routers.md#inverted-dot-product-attention)."""

import math

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.ops.norms import clip_magnitude, rescaled
from keras_capsules.ops.softmax import softmax_along
from keras_capsules.routing.base import (
    Router,
    child_major,
    coupling_full,
    parent_major,
    saturating_cast,
    vote_agreement,
    weighted_votes,
)
from keras_capsules.routing.registry import register_router


@register_router("inverted_dot_product")
class InvertedDotProductRouter(Router):
    """Inverted dot-product attention routing (Tsai, Srivastava, Goh & Salakhutdinov 2020): parents attend to votes.

    Each parent pose is compared with the votes it receives, each child spreads itself over the parents
    by a softmax of those agreements, and each parent is the layer-normalised sum of the votes routed to
    it. With votes ``v`` ``(batch, in_caps, out_caps, d)`` and parent poses ``p`` ``(batch, out_caps, d)``
    (zeros at first, so the first pass is uniform), ``iterations`` times:

        a_ij = p_j . v_ij / sqrt(d)                       (batch, in_caps, out_caps)
        r_ij = softmax over the parents j of a_ij
        p_j  = LayerNorm(Dropout(sum_i r_ij v_ij))        no division by sum_i r_ij

    This is one layer of the paper's sequential routing; the concurrent schedule over a stack of layers is
    :class:`~keras_capsules.layers.ConcurrentRouting`. The outputs are the poses ``p`` and, as activations
    (a proxy: the capsules have none), each parent's share of the routing mass ``sum_i r_ij / in_caps``
    ``(batch, out_caps)``. Child activations are ignored. The weights are the LayerNorm's scale and offset
    ``(d,)``. The vote clip's gradient passes straight through
    (:func:`~keras_capsules.ops.norms.clip_magnitude`).

    Args:
        iterations: passes ``t`` (apple's ``num_routing``). Defaults to 2 (its README runs).
        scale_agreement: divide the agreement by ``sqrt(d)`` (in apple's code, not in the paper).
            Defaults to ``True``.
        dropout: dropout rate on ``sum_i r_ij v_ij`` before the LayerNorm, in training (apple's ``--dp``).
            Defaults to 0.
        epsilon: LayerNorm epsilon. Defaults to 1e-5 (PyTorch's; Keras' 1e-3 differs).
        max_vote: votes are clipped to ``+-max_vote``; ``None`` disables the clip. Defaults to 1e15.
        gamma_initializer, beta_initializer: of the LayerNorm. Default to ``"ones"`` and ``"zeros"``.
        seed: seed of the dropout noise. Defaults to ``None``.
        **kwargs: ``quantize_levels``, ``jit_compile`` (see :class:`Router`) and the
            ``keras.layers.Layer`` arguments.

    Call arguments beyond the :class:`Router` contract (used by ``ConcurrentRouting``):
        initial_poses: ``(batch, out_caps, d)`` parent poses to start from; every pass is then a
            refinement (no uniform first pass).
        steps: the number of passes of this call. Defaults to ``iterations``.
        finalize: apply ``finalize_coupling`` (REM quantisation at inference) to the last pass.
            Defaults to ``True``; ``ConcurrentRouting`` sets it on the final sweep only.

    Example:
        >>> router = InvertedDotProductRouter(iterations=2)
        >>> poses, shares = router(keras.random.normal((8, 288, 10, 16)))  # (8, 10, 16), (8, 10)

    See the routers reference (docs/reference/routers.md#inverted-dot-product-attention) and
    docs/routers/inverted_dot_product.md for the numerical safeguards and the differences from apple's code.
    """

    accepts_parent_major = True

    #: ``call`` accepts ``initial_poses`` (used by :class:`~keras_capsules.layers.ConcurrentRouting`).
    supports_initial_poses = True
    #: A single uniform pass can be made from the votes' sums over the children (:meth:`route_vote_sums`).
    accepts_vote_sums = True

    def __init__(
        self,
        iterations=2,
        scale_agreement=True,
        dropout=0.0,
        epsilon=1e-5,
        max_vote=1e15,
        gamma_initializer="ones",
        beta_initializer="zeros",
        seed=None,
        **kwargs,
    ):
        super().__init__(iterations=iterations, **kwargs)
        self.scale_agreement = bool(scale_agreement)
        if not 0.0 <= float(dropout) < 1.0:
            errors.fail(self, "dropout", "a rate in [0, 1)", dropout)
        self.dropout = float(dropout)
        self.epsilon = float(epsilon)
        if max_vote is not None and not float(max_vote) > 0:
            errors.fail(self, "max_vote", "None or a positive float", max_vote)
        self.max_vote = None if max_vote is None else float(max_vote)
        self.gamma_initializer = keras.initializers.get(gamma_initializer)
        self.beta_initializer = keras.initializers.get(beta_initializer)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed) if self.dropout > 0 else None

    def build_router(self, votes_shape):
        _, _, out_caps, out_dim = votes_shape
        if out_dim is None:
            errors.fail(self, "votes", "a known out_dim", f"shape {tuple(votes_shape)}")
        self.gamma = self.add_weight(name="gamma", shape=(out_dim,), initializer=self.gamma_initializer)
        self.beta = self.add_weight(name="beta", shape=(out_dim,), initializer=self.beta_initializer)

    def call(
        self,
        votes,
        activations=None,
        training=None,
        return_coupling=False,
        votes_layout="child_major",
        initial_poses=None,
        steps=None,
        finalize=True,
    ):
        dtype = self.output_dtype(votes)
        votes32 = ops.cast(votes, "float32")
        if self.check_votes_layout(votes_layout) == "child_major":
            votes32 = parent_major(votes32)  # (batch, out, in, d): batched matmuls below
        poses32 = None
        if initial_poses is not None:
            errors.check_rank(self, "initial_poses", tuple(initial_poses.shape), 3, "(batch, out_caps, out_dim)")
            errors.check_dim(self, "initial_poses", tuple(initial_poses.shape), 1, votes32.shape[1], "out_caps")
            errors.check_dim(self, "initial_poses", tuple(initial_poses.shape), 2, votes32.shape[3], "out_dim")
            poses32 = ops.cast(initial_poses, "float32")
        if steps is not None:
            errors.check_positive_int(self, "steps", steps)
        outputs = self._route(votes32, training, poses32, steps or self.iterations, finalize)
        return tuple(saturating_cast(x, dtype) for x in outputs[: 3 if return_coupling else 2])

    def route_parent_major(self, votes, activations, training):
        return self._route(votes, training, None, self.iterations, True)

    def route_vote_sums(self, vote_sums, in_caps, training=None, return_coupling=False, finalize=True, dtype=None):
        """One uniform pass (parents at zero) from the votes summed over the children.

        The first pass routes ``1/out_caps`` of every vote to every parent, so it needs only
        ``sum_i v_ij``: a capsule layer forms those sums as one matrix product of its children with
        the transform, without the vote tensor (``vote_transform.child_sums``, used by
        :meth:`~keras_capsules.layers.routed_capsules.RoutedCapsules.vote_and_route` when a call
        makes this single pass). The outputs equal ``call``'s with ``steps=1`` and no
        ``initial_poses``; the clip to ``max_vote`` bounds the sums (``in_caps * max_vote``) rather
        than each vote, which differs only for votes beyond ``max_vote``.

        Args:
            vote_sums: ``(batch, out_caps, out_dim)``, ``sum_i v_ij`` (float32 from a capsule layer,
                whatever its compute dtype: the sums overflow float16 long before the votes).
            in_caps: the number of children summed.
            training, return_coupling, finalize: as in ``call``.
            dtype: the outputs' dtype, that of the votes the full pass would have routed (default:
                ``vote_sums``' dtype).

        Returns:
            As ``call``: poses ``(batch, out_caps, out_dim)``, shares ``(batch, out_caps)`` and,
            with ``return_coupling``, the coupling ``(batch, in_caps, out_caps)``.
        """
        dtype = dtype or self.output_dtype(vote_sums)
        sums = ops.cast(vote_sums, "float32")
        if self.max_vote is not None:
            sums = clip_magnitude(sums, self.max_vote * in_caps)
        batch, out_caps = ops.shape(sums)[0], sums.shape[1]
        share = ops.full((1, 1, 1), 1.0 / out_caps, dtype="float32")  # the uniform coupling
        if finalize:
            share = self.finalize_coupling(share, training)
        outputs = (self._parent_poses(sums * share, training), ops.broadcast_to(share[0], (batch, out_caps)))
        if return_coupling:
            outputs += (ops.broadcast_to(share, (batch, in_caps, out_caps)),)
        return tuple(saturating_cast(x, dtype) for x in outputs)

    def _parent_poses(self, pooled, training):
        """The parents' poses from the coupling-weighted vote sums ``(batch, out_caps, out_dim)``: dropout in training, then LayerNorm."""
        if self.seed_generator is not None and training:
            pooled = keras.random.dropout(pooled, self.dropout, seed=self.seed_generator)
        return self._layer_norm(pooled)

    def _layer_norm(self, x):
        """``(x - mean) / sqrt(var + eps) * gamma + beta`` over the last axis, overflow-safe.

        The centred values are divided by ``s = max(1, max|x - mean|)`` (a constant for the
        gradient) before squaring, and the epsilon by ``s**2``: the same function, but the sum of
        squares cannot overflow float32 for any finite input. For ``s = 1`` it is the textbook form.
        """
        centred = x - ops.mean(x, axis=-1, keepdims=True)
        centred, scale = rescaled(centred)
        variance = ops.mean(ops.square(centred), axis=-1, keepdims=True)
        normed = centred / ops.sqrt(variance + self.epsilon / ops.square(scale))
        return normed * ops.cast(self.gamma, "float32") + ops.cast(self.beta, "float32")

    def _route(self, votes, training, poses, steps, finalize):
        """The passes on parent-major votes ``(batch, out_caps, in_caps, out_dim)``."""
        if self.max_vote is not None:
            # The clip's gradient passes straight through: a masked gradient cost four passes over the vote
            # tensor, about a third of a training step, for votes no network makes.
            votes = clip_magnitude(votes, self.max_vote)
        scale = 1.0 / math.sqrt(votes.shape[-1]) if self.scale_agreement else 1.0
        for step in range(steps):
            if poses is None:  # zero logits: uniform over the parents
                coupling = coupling_full(votes, 1.0 / votes.shape[1])
            else:
                coupling = softmax_along(vote_agreement(votes, poses) * scale, axis=1)
            if finalize and step == steps - 1:
                coupling = self.finalize_coupling(coupling, training)
            poses = self._parent_poses(weighted_votes(coupling, votes), training)
        shares = ops.mean(coupling, axis=2)
        return poses, shares, child_major(coupling)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "scale_agreement": self.scale_agreement,
                "dropout": self.dropout,
                "epsilon": self.epsilon,
                "max_vote": self.max_vote,
                "gamma_initializer": keras.initializers.serialize(self.gamma_initializer),
                "beta_initializer": keras.initializers.serialize(self.beta_initializer),
                "seed": self.seed,
            }
        )
        return config
