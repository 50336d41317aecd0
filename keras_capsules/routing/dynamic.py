"""Dynamic routing by agreement (Sabour, Frosst & Hinton 2017; docs/reference/routers.md#dynamic-routing)."""

from keras import ops

from keras_capsules.ops.norms import safe_norm
from keras_capsules.ops.softmax import softmax_along
from keras_capsules.ops.squash import squash
from keras_capsules.routing.base import Router, child_major, coupling_full, limit_votes, vote_agreement, weighted_votes
from keras_capsules.routing.registry import register_router


@register_router("dynamic")
class DynamicRouter(Router):
    """Routing by agreement.

    ``b = 0``; ``iterations`` times: ``c = softmax_parents(b)``, ``s_j = sum_i c_ij u_j|i (+ bias_j)``,
    ``v_j = squash(s_j)``, ``b_ij += u_j|i . v_j``. The logit update after the last iteration is skipped.

    - Softmax axis: over the **parents** (``out_caps``), separately for each child.
    - Initial state: logits ``b`` of zeros, one set per example (so the first ``c`` is ``1/out_caps``).
    - Parameters: ``bias`` ``(out_caps, out_dim)``, initialised to 0.1, when ``use_bias`` (the official
      TF code; XifengGuo has none; the paper's rounded "6.8M" fits either count, 6,804,224 without
      the bias or 6,804,384 with it).
    - Output activations: the length of ``v_j`` (the documented proxy; squashed lengths are in [0, 1)).
    - Safeguards: ``squash`` with ``epsilon`` under the norm (finite at ``s = 0``, overflow-safe);
      float32 maths; each example's votes are scaled down to ``max|u| <= 1e15`` when larger
      (:func:`~keras_capsules.routing.base.limit_votes`), so the agreements cannot overflow.
    - Differences from references: ``stop_gradient_inner=True`` reproduces REM/older XifengGuo (votes
      detached in every iteration but the last); the default lets gradients flow through every
      iteration, like the official code. ``leaky=True`` adds the official code's leaky-routing column.

    Args:
        iterations: routing iterations ``r`` (paper: 3).
        use_bias: add the official per-parent bias before squashing.
        stop_gradient_inner: detach the votes in all but the last iteration.
        leaky: prepend a zero logit ("orphan" parent) to each child's softmax, then drop it.
        epsilon: squash epsilon.
        bias_initializer: initializer of ``bias``.
    """

    accepts_parent_major = True
    compiles_in_training = True

    def __init__(
        self,
        iterations=3,
        use_bias=True,
        stop_gradient_inner=False,
        leaky=False,
        epsilon=1e-7,
        bias_initializer=None,
        **kwargs,
    ):
        super().__init__(iterations=iterations, **kwargs)
        self.use_bias = bool(use_bias)
        self.stop_gradient_inner = bool(stop_gradient_inner)
        self.leaky = bool(leaky)
        self.epsilon = float(epsilon)
        self.bias_initializer = bias_initializer

    def build_router(self, votes_shape):
        _, _, out_caps, out_dim = votes_shape
        if self.use_bias:
            initializer = self.bias_initializer or {"class_name": "Constant", "config": {"value": 0.1}}
            self.bias = self.add_weight(name="bias", shape=(out_caps, out_dim), initializer=initializer)

    def _coupling(self, logits):
        """Softmax over parents of logits ``(batch, out_caps, in_caps)``."""
        if not self.leaky:
            return softmax_along(logits, axis=1)
        orphan = ops.zeros_like(logits[:, :1])
        return softmax_along(ops.concatenate([orphan, logits], axis=1), axis=1)[:, 1:]

    def route_parent_major(self, votes, activations, training):
        votes = limit_votes(votes)  # one factor per example: the same in either layout
        # softmax of the zero initial logits, written as the constant it is: a softmax over a constant
        # tensor makes XLA (JAX) fold it at compile time (13-28 s per traced function at batch 500).
        uniform = 1.0 / (votes.shape[1] + 1 if self.leaky else votes.shape[1])
        logits = None
        bias = ops.cast(self.bias, "float32") if self.use_bias else 0.0
        for step in range(self.iterations):
            last = step == self.iterations - 1
            used = votes if (last or not self.stop_gradient_inner) else ops.stop_gradient(votes)
            coupling = coupling_full(votes, uniform) if logits is None else self._coupling(logits)
            if last:
                coupling = self.finalize_coupling(coupling, training)
            poses = squash(weighted_votes(coupling, used) + bias, epsilon=self.epsilon)
            if not last:
                agreement = vote_agreement(used, poses)
                logits = agreement if logits is None else logits + agreement
        return poses, safe_norm(poses, epsilon=self.epsilon), child_major(coupling)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "use_bias": self.use_bias,
                "stop_gradient_inner": self.stop_gradient_inner,
                "leaky": self.leaky,
                "epsilon": self.epsilon,
                "bias_initializer": self.bias_initializer,
            }
        )
        return config
