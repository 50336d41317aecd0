"""Self-attention routing of Efficient-CapsNet (Mazzia et al. 2021; docs/reference/routers.md#self-attention-routing)."""

import math

from keras import ops

from keras_capsules.ops.norms import safe_norm
from keras_capsules.ops.softmax import softmax_along
from keras_capsules.ops.squash import squash_efficient
from keras_capsules.routing.base import Router, child_major, limit_votes, vote_agreement, weighted_votes
from keras_capsules.routing.registry import register_router


@register_router("self_attention")
class SelfAttentionRouter(Router):
    """Self-attention routing of Efficient-CapsNet (Mazzia, Salvetti & Chiaberge 2021): one pass, no iterations.

    A child's weight for a parent is how much its vote agrees with the votes of all the children (the row
    sums of the parent's scaled self-attention matrix), normalised over the parents; a learned prior is
    added after the softmax. With votes ``u`` ``(batch, in_caps, out_caps, d)``:

        e_ij = u_j|i . (sum_k u_j|k) / sqrt(d)           (batch, in_caps, out_caps)
        c_ij = softmax over the parents j of e_ij
        v_j  = squash_efficient(sum_i (c_ij + b_ij) u_j|i)   (batch, out_caps, d)

    The outputs are the poses ``v`` and their lengths ``(batch, out_caps)`` as activations (a proxy);
    child activations are ignored. The only weight is the prior ``b`` ``(in_caps, out_caps)``. Each
    example's votes are scaled down to ``max|u| <= 1e15`` when larger
    (:func:`~keras_capsules.routing.base.limit_votes`): the logits ``u . sum u`` gave NaN for votes of 1e20.

    Args:
        epsilon: guard of ``squash_efficient`` and of the returned lengths ``sqrt(|v|^2 + epsilon)``.
            Defaults to 1e-7 (safe in float16). The authors' code uses 1e-20 in its squash but 1e-7 in its
            lengths, so ``epsilon=1e-20`` matches its squash, not its lengths near ``v = 0``.
        bias_initializer: initializer of the prior ``b``. Defaults to ``"zeros"``.
        **kwargs: ``quantize_levels``, ``jit_compile`` (see :class:`Router`) and the
            ``keras.layers.Layer`` arguments (``iterations`` must be 1).

    Example:
        >>> router = SelfAttentionRouter()
        >>> poses, lengths = router(keras.random.normal((8, 16, 10, 16)))  # (8, 10, 16), (8, 10)

    See the routers reference (docs/reference/routers.md#self-attention-routing) and
    docs/routers/self_attention.md for the numerical safeguards and the differences from the authors' code.
    """

    accepts_parent_major = True

    iterative = False

    def __init__(self, iterations=1, epsilon=1e-7, bias_initializer="zeros", **kwargs):
        super().__init__(iterations=iterations, **kwargs)
        self.epsilon = float(epsilon)
        self.bias_initializer = bias_initializer

    def build_router(self, votes_shape):
        _, in_caps, out_caps, _ = votes_shape
        self.bias = self.add_weight(name="bias", shape=(in_caps, out_caps), initializer=self.bias_initializer)

    def route_parent_major(self, votes, activations, training):
        out_dim = votes.shape[-1]
        votes = limit_votes(votes)  # one factor per example: the same in either layout
        totals = ops.sum(votes, axis=2)
        logits = vote_agreement(votes, totals) / math.sqrt(out_dim)
        coupling = self.finalize_coupling(softmax_along(logits, axis=1), training)
        weights = coupling + ops.transpose(ops.cast(self.bias, "float32"))
        poses = squash_efficient(weighted_votes(weights, votes), epsilon=self.epsilon)
        return poses, safe_norm(poses, epsilon=self.epsilon), child_major(coupling)

    def get_config(self):
        config = super().get_config()
        config.update({"epsilon": self.epsilon, "bias_initializer": self.bias_initializer})
        return config
