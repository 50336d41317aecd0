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
    """Non-iterative self-attention routing.

    ``e_ji = sum_k <u_j|i, u_j|k> / sqrt(out_dim)`` (the row sums of ``A_j = U_j U_j^T / sqrt(d)``),
    ``c_ji = softmax_j(e_ji)``, ``s_j = sum_i u_j|i (c_ji + b_ji)``, ``v_j = squash_efficient(s_j)``.

    - Softmax axis: over the **parents** ``j`` (``out_caps``), as in the reference code.
    - Initial state: none (a single pass; ``iterations`` must be 1).
    - Parameters: the log-prior ``bias`` ``(in_caps, out_caps)``, zeros. As in EscVM's code it is added
      **after** the softmax (the paper calls it a log prior, which would go inside).
    - Cost: the row sum is computed as ``<u_j|i, sum_k u_j|k>``, O(in_caps * d) per parent instead of
      forming the ``in_caps x in_caps`` matrix (equal up to float rounding).
    - Output activations: the length of ``v_j`` (documented proxy).
    - Safeguards: float32 maths; the stable softmax; ``squash_efficient`` uses ``exp(-|s|)`` and
      ``epsilon``, finite at zero and for long vectors; each example's votes are scaled down to
      ``max|u| <= 1e15`` when larger (:func:`~keras_capsules.routing.base.limit_votes`), so the
      logits ``u . sum u`` cannot overflow (they gave NaN for votes of 1e20).
    - Child activations are not used (the reference FCCaps has no activation input).

    Args:
        epsilon: ``squash_efficient`` epsilon (EscVM uses 1e-20; 1e-7 is the float16-safe default),
            also the one under the returned lengths ``sqrt(|v|^2 + epsilon)`` (EscVM's ``Length``
            uses 1e-7, so 1e-20 matches its squash but not its lengths near ``v = 0``).
        bias_initializer: initializer of ``bias``.
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
