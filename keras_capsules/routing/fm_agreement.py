"""FM agreement: pairwise-product agreement in O(kn) (Zhao, Wang & Huang; docs/reference/routers.md#fm-agreement).

The paper: *An Efficient Agreement Mechanism in CapsNets By Pairwise Product*.
"""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.ops.norms import clip_magnitude, rescaled
from keras_capsules.routing.base import Router, child_major, vote_agreement, weighted_votes
from keras_capsules.routing.registry import register_router

SCALES = ("paper", "code")
ACTIVATIONS = ("sum", "squash")

#: Votes are clipped to this magnitude before the batch-norm statistics, whose squares would
#: otherwise overflow float32 (1e19 squared); ordinary votes are never touched.
_BN_SAFE_MAGNITUDE = 1e15


def unit_vectors(x, epsilon):
    """``x / |x|`` over the last axis, finite for zero vectors and for any finite magnitude.

    Computed as ``u * rsqrt(sum u^2 + epsilon / m^2)`` with ``u = x / m``, ``m = max(max|x|, 1)``
    (gradient-free; :func:`~keras_capsules.ops.norms.rescaled`), which equals
    ``x * rsqrt(sum x^2 + epsilon)``: a zero vector maps to zero with a finite gradient, vectors much
    longer than ``sqrt(epsilon)`` come out with unit length, and no squared norm can overflow (a
    vector of norm 1e20 keeps its direction).

    Args:
        x: ``(..., dim)`` float32.
        epsilon: guard under the square root.

    Returns:
        ``(..., dim)``.
    """
    unit, m = rescaled(x)
    return unit * ops.rsqrt(ops.sum(ops.square(unit), axis=-1, keepdims=True) + epsilon / ops.square(m))


def fm_pairwise_sum(total, squares, n, scale="paper"):
    """The FM agreement ``s_j`` in O(n k) from two sums over the children: ``c [ total^2 - squares ]``.

    With ``total = sum_i u_i`` and ``squares = sum_i u_i * u_i`` (elementwise), this equals
    ``2c * sum_{i<i'} u_i * u_i'``, with ``c = 1/(2n)`` for ``scale="paper"`` (Algorithm 1:
    ``(1/n) sum_{i<i'}``) and ``c = 1/n`` for ``scale="code"`` (FMRouting rescales the votes by
    ``1/sqrt(n)`` and drops the 1/2).

    Args:
        total, squares: ``(batch, out_caps, dim)``, sums over the ``n`` children of the normalised
            votes and of their squares.
        n: number of children.
        scale: ``"paper"`` or ``"code"``.

    Returns:
        ``(batch, out_caps, dim)``.
    """
    factor = 1.0 / (2.0 * n) if scale == "paper" else 1.0 / n
    return factor * (ops.square(total) - squares)


@register_router("fm_agreement")
class FMAgreementRouter(Router):
    """FM agreement (Zhao, Wang & Huang, Algorithm 1): pairwise products of unit votes in one pass, no iterations.

    A parent is the mean pairwise element-wise product of its children's unit votes (a factorisation
    machine's second-order term), large where many votes agree, computed in ``O(n d)`` rather than
    ``O(n^2 d)``. With votes ``u`` ``(batch, in_caps, out_caps, d)``, optionally batch-normalised first
    (the paper's Algorithm 2), and ``n = in_caps``:

        u_j|i = u_j|i / |u_j|i|
        s_j   = ((sum_i u_j|i)^2 - sum_i u_j|i^2) / (2 n)     element-wise; (batch, out_caps, d)
        p_j   = s_j / |s_j|   (or s_j with normalize_pose=False)
        a_j   = sum_f s_jf                                    (batch, out_caps)

    ``a_j`` is raw, in ``[-1/2, (n - 1)/2]``: a logit, not a probability (the authors' code feeds it to a
    softmax cross-entropy), so use ``classifier_activation="softmax"`` or a ``from_logits`` loss.
    Child activations are ignored. The coupling returned with ``return_coupling=True`` is a proxy: child
    ``i``'s share of parent ``j``'s agreement, ``c_ij = (1 + g_ij) / sum_i' (1 + g_i'j)`` with ``g_ij`` the
    mean cosine between child ``i``'s vote and the other children's (``sum_i g_ij = 2 n a_j / (n - 1)``),
    summing to 1 over the children; it does not weight the votes, so ``quantize_levels`` changes only it.
    Weights: those of the vote batch norm, if any.

    Args:
        scale: ``"paper"`` (Algorithm 1's ``1/(2n)``) or ``"code"`` (FMRouting's ``1/n``: twice ``s_j``).
            Defaults to ``"paper"``. The normalised pose is the same; a squashed or unnormalised pose is
            not, so use ``"code"`` to match FMRouting there (between FM layers the factor of 2 of a hidden
            layer is undone by the next layer's vote normalisation, up to its epsilons).
        normalize_pose: output ``s_j / |s_j|`` (last layer) or ``s_j`` itself (FMRouting's hidden layers).
            Defaults to ``True``.
        activation: ``"sum"`` (``a_j = sum_f s_jf``) or ``"squash"`` (the affNIST code's ``p = squash(s)``,
            ``a = |s|^2 / (1 + |s|^2)``). Defaults to ``"sum"``.
        batch_norm: batch-normalise the votes first (a float32 ``BatchNormalization`` sublayer that
            follows ``training``). Defaults to ``True``.
        batch_norm_axis: int or tuple of ints of the votes ``(batch, in_caps, out_caps, d)`` that keep
            their own statistics. Defaults to -1 (one per pose entry, the CIFAR code); the smallNORB code
            uses ``(1, 2, 3)``.
        batch_norm_momentum, batch_norm_epsilon: of the batch norm. Default to 0.99 and 1e-3 (Keras').
        epsilon: guard under the square roots of the L2 normalisations. Defaults to 1e-7.
        **kwargs: ``quantize_levels``, ``jit_compile`` (see :class:`Router`) and the
            ``keras.layers.Layer`` arguments (``iterations`` must be 1).

    Example:
        >>> router = FMAgreementRouter()
        >>> poses, logits = router(keras.random.normal((2, 64, 10, 16)))  # (2, 10, 16), (2, 10)

    See the routers reference (docs/reference/routers.md#fm-agreement) and docs/routers/fm_agreement.md
    for the numerical safeguards and the differences from the authors' code.
    """

    iterative = False
    accepts_parent_major = True
    coupling_sums_over = "children"

    def __init__(
        self,
        iterations=1,
        scale="paper",
        normalize_pose=True,
        activation="sum",
        batch_norm=True,
        batch_norm_axis=-1,
        batch_norm_momentum=0.99,
        batch_norm_epsilon=1e-3,
        epsilon=1e-7,
        **kwargs,
    ):
        super().__init__(iterations=iterations, **kwargs)
        self.scale = errors.check_one_of(self, "scale", scale, SCALES)
        self.activation = errors.check_one_of(self, "activation", activation, ACTIVATIONS)
        self.normalize_pose = bool(normalize_pose)
        self.batch_norm = bool(batch_norm)
        if isinstance(batch_norm_axis, (list, tuple)) and all(errors.is_integer(a) for a in batch_norm_axis):
            batch_norm_axis = [int(a) for a in batch_norm_axis]
        elif errors.is_integer(batch_norm_axis):
            batch_norm_axis = int(batch_norm_axis)
        else:
            errors.fail(self, "batch_norm_axis", "an int or a list of ints", batch_norm_axis, TypeError)
        self.batch_norm_axis = batch_norm_axis
        self.batch_norm_momentum = float(batch_norm_momentum)
        self.batch_norm_epsilon = float(batch_norm_epsilon)
        self.epsilon = float(epsilon)
        self.vote_norm = None
        if self.batch_norm:
            # Keras' BatchNormalization takes one axis: the normalised axes are moved last and
            # flattened into it (see _normalize_votes).
            self.vote_norm = keras.layers.BatchNormalization(
                axis=-1,
                momentum=self.batch_norm_momentum,
                epsilon=self.batch_norm_epsilon,
                dtype="float32",
                name="vote_batch_norm",
            )

    def build_router(self, votes_shape):
        in_caps = votes_shape[1]
        if in_caps is None:
            errors.fail(self, "votes", "a known in_caps (axis 1): the FM scale is 1/n", f"shape {votes_shape}")
        if self.vote_norm is not None:
            axes = self.batch_norm_axis if isinstance(self.batch_norm_axis, list) else [self.batch_norm_axis]
            if not axes or any(not -3 <= axis <= 3 or axis == 0 for axis in axes):
                errors.fail(
                    self, "batch_norm_axis", "non-batch axes of the votes (1, 2, 3 or -1, -2, -3)", self.batch_norm_axis
                )
            kept = sorted({axis % 4 for axis in axes})  # axes of the contract layout (batch, in, out, dim)
            reduced = [axis for axis in (1, 2, 3) if axis not in kept]
            # The router works on parent-major votes (batch, out, in, dim): the same axes, in and out
            # swapped; the kept axes keep the contract order, so the features (and the batch norm's
            # weights) are laid out as in the contract layout.
            swap = {1: 2, 2: 1, 3: 3}
            self._bn_last_axis_only = kept == [3]
            self._bn_permutation = [0] + [swap[axis] for axis in reduced + kept]
            self._bn_inverse = [self._bn_permutation.index(axis) for axis in range(4)]
            self._bn_reduced_dims = tuple(votes_shape[axis] for axis in reduced)
            self._bn_kept_dims = tuple(votes_shape[axis] for axis in kept)
            if None in self._bn_reduced_dims + self._bn_kept_dims:
                errors.fail(self, "votes", "known in_caps, out_caps and out_dim", f"shape {votes_shape}")
            features = 1
            for dim in self._bn_kept_dims:
                features *= dim
            self._bn_features = features
            self.vote_norm.build((None,) + self._bn_reduced_dims + (features,))

    def _normalize_votes(self, votes, training, clip):
        if self.vote_norm is None:
            return votes
        # Identity for ordinary votes; keeps the batch statistics (and the affine map) finite for absurdly large ones.
        x = clip_magnitude(votes, _BN_SAFE_MAGNITUDE) if clip else votes
        if self._bn_last_axis_only:  # statistics over every axis but the last: any layout as is
            return self.vote_norm(x, training=training)
        batch = ops.shape(x)[0]
        x = ops.reshape(ops.transpose(x, self._bn_permutation), (batch,) + self._bn_reduced_dims + (self._bn_features,))
        x = self.vote_norm(x, training=training)
        x = ops.reshape(x, (batch,) + self._bn_reduced_dims + self._bn_kept_dims)
        return ops.transpose(x, self._bn_inverse)

    def _unit_terms(self, votes, training):
        """The normalised votes as ``u = y * r``, without forming ``u``, on parent-major votes.

        Returns ``y`` (the batch-normalised votes) and ``q = y^2``, ``(batch, out_caps, in_caps,
        dim)``, and ``r = 1 / sqrt(|y|^2 + epsilon)`` and ``|y|^2``, ``(batch, out_caps, in_caps)``.
        The common case takes this cheap path; only when some squared norm is not finite (votes
        beyond ~1e19, or a batch-norm output that overflowed) is the whole batch recomputed on the
        guarded path (votes clipped before the batch norm, then :func:`unit_vectors`, with
        ``r = 1``). A scalar ``cond`` picks one branch, so ordinary inputs never pay for the guard.
        In training the clip always comes first: the batch statistics are computed (and the moving
        averages updated) once, from finite values.
        """
        clip_first = bool(training) and self.vote_norm is not None
        y = self._normalize_votes(votes, training, clip=clip_first)
        q = ops.square(y)
        squared = ops.sum(q, axis=-1)

        def cheap():
            return y, q, ops.rsqrt(squared + self.epsilon), squared

        def guarded():
            units = unit_vectors(y if clip_first else self._normalize_votes(votes, training, clip=True), self.epsilon)
            unit_squares = ops.square(units)
            return units, unit_squares, ops.ones_like(squared), ops.sum(unit_squares, axis=-1)

        return ops.cond(ops.all(ops.isfinite(squared)), cheap, guarded)

    def route_parent_major(self, votes, activations, training):
        # Cost per vote entry (N = batch * in_caps * out_caps * dim): the batch norm's affine map (2 flops),
        # y^2 and |y|^2 (2), then sum_i u and sum_i u^2 as two batched matrix-vector products with the weights
        # r and r^2 (4); the unit votes u = y r are never written out. One dynamic-routing iteration is 4N, its
        # last 2N. Training adds the clip before the batch statistics (2) and the moments (3); the coupling
        # proxy (2N) is pruned from a traced graph unless it is returned.
        y, q, r, squared = self._unit_terms(votes, training)
        # The sums over the children of u = y r and of u^2 = q r^2, as batched matrix-vector products.
        total = weighted_votes(r, y)
        n = votes.shape[2]
        s = fm_pairwise_sum(total, weighted_votes(ops.square(r), q), n, self.scale)

        # u_i . (total - u_i) = r_i (y_i . total) - r_i^2 |y_i|^2
        agreement = (r * vote_agreement(y, total) - ops.square(r) * squared) / max(n - 1, 1)
        share = ops.relu(1.0 + agreement) + 1e-6
        coupling = child_major(self.finalize_coupling(share / ops.sum(share, axis=2, keepdims=True), training))

        if self.activation == "squash":
            q = ops.sum(ops.square(s), axis=-1, keepdims=True)
            length = 1.0 - 1.0 / (1.0 + q)
            return unit_vectors(s, self.epsilon) * length, length[..., 0], coupling
        out_acts = ops.sum(s, axis=-1)
        poses = unit_vectors(s, self.epsilon) if self.normalize_pose else s
        return poses, out_acts, coupling

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "scale": self.scale,
                "normalize_pose": self.normalize_pose,
                "activation": self.activation,
                "batch_norm": self.batch_norm,
                "batch_norm_axis": self.batch_norm_axis,
                "batch_norm_momentum": self.batch_norm_momentum,
                "batch_norm_epsilon": self.batch_norm_epsilon,
                "epsilon": self.epsilon,
            }
        )
        return config
