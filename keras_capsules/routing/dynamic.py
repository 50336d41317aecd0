"""Dynamic routing by agreement (Sabour, Frosst & Hinton 2017; docs/reference/routers.md#dynamic-routing)."""

from keras import ops

from keras_capsules.ops.norms import safe_norm
from keras_capsules.ops.softmax import softmax_along
from keras_capsules.ops.squash import squash
from keras_capsules.routing.base import Router, child_major, coupling_full, limit_votes, vote_agreement, weighted_votes
from keras_capsules.routing.registry import register_router


@register_router("dynamic")
class DynamicRouter(Router):
    """Dynamic routing by agreement (Sabour, Frosst & Hinton 2017).

    Each child splits itself over the parents by a softmax of routing logits that start at zero; each
    parent squashes the coupling-weighted sum of its votes, and every child raises its logits for the
    parents whose output agrees with its vote. With votes ``u`` ``(batch, in_caps, out_caps, out_dim)``,
    ``iterations`` times:

        c_ij = softmax over the parents j of b_ij        (batch, in_caps, out_caps); b = 0 at first
        v_j  = squash(sum_i c_ij u_j|i + bias_j)          (batch, out_caps, out_dim)
        b_ij = b_ij + u_j|i . v_j                         skipped after the last iteration

    The outputs are the poses ``v`` and their lengths ``(batch, out_caps)`` as activations (a proxy in
    [0, 1)); child activations are ignored. Each example's votes are scaled down to ``max|u| <= 1e15``
    when larger (:func:`~keras_capsules.routing.base.limit_votes`), so the agreements cannot overflow.

    Args:
        iterations: routing iterations. Defaults to 3 (the paper).
        use_bias: add a per-parent bias ``(out_caps, out_dim)`` before the squash, as the authors' code
            does. Defaults to ``True``; ``CapsNet`` turns it off (the paper's 6,804,224 parameters).
        stop_gradient_inner: detach the votes in every iteration but the last, as REM's code does.
            Defaults to ``False`` (gradients flow through every iteration).
        leaky: add the authors' code's "orphan" parent (a zero logit) to each child's softmax.
            Defaults to ``False``.
        epsilon: guard under the square roots of the squash and of the lengths. Defaults to 1e-7.
        bias_initializer: initializer of the bias. Defaults to ``Constant(0.1)``.
        **kwargs: ``quantize_levels``, ``jit_compile`` (see :class:`Router`) and the
            ``keras.layers.Layer`` arguments.

    Example:
        >>> router = DynamicRouter(iterations=3)
        >>> poses, lengths = router(keras.random.normal((8, 1152, 10, 16)))  # (8, 10, 16), (8, 10)

    See the routers reference (docs/reference/routers.md#dynamic-routing) and docs/routers/dynamic.md for
    the numerical safeguards and the differences from the authors' code.
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
