"""Self-routing of Hahn, Pyeon and Kim (docs/reference/routers.md#self-routing).

The paper: *Self-Routing Capsule Networks* (NeurIPS 2019).
"""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.routing.base import Router, limit_votes, ones_activations
from keras_capsules.routing.registry import register_router

#: Floor of the activation sums that divide: a parent no active child uses gets pose 0 and activation 0.
TINY = 1e-20


@register_router("self_routing")
class SelfRoutingRouter(Router):
    """Self-routing: every child's own routing network sends it to the parents, with no agreement.

    Each child ``i`` has a learned linear routing network (a mixture-of-experts gate) that scores the
    parents from what the child carries; the scores are never revised. With votes ``u`` ``(batch, in_caps,
    out_caps, d)`` and child activations ``a`` ``(batch, in_caps)`` (ones when absent):

        logit_ij = sum_k W_ijk u_j|i,k + b_ij                 (batch, in_caps, out_caps)
        c_ij     = softmax over the parents j of logit_ij     (batch, in_caps, out_caps)
        a_j      = sum_i a_i c_ij / sum_i a_i                 (batch, out_caps)
        v_j      = sum_i a_i c_ij u_j|i / sum_i a_i c_ij      (batch, out_caps, d)

    ``W`` ``(in_caps, out_caps, d)`` and ``b`` ``(in_caps, out_caps)`` are per child and per parent
    (a convolutional capsule layer folds positions into the batch, so they are shared by the positions,
    as the official ``SelfRouting2d``'s ``W2`` and ``b2`` are); both start at zero, as in the official
    code, so the first coupling is uniform. The activation is the code's normalisation (equation 3 of
    the paper: the weighted sum of the children's activations over their sum).

    Where the library differs from the paper: the paper's logits come from the child's own pose ``u_i``
    (``W2_i u_i + b2_i``), while the router contract hands a router the votes ``u_j|i = W1_ij u_i``
    only. The router therefore scores parent ``j`` from the vote for ``j``. Since the vote is linear in
    the pose, ``W_ij . u_j|i = (W1_ij^T W_ij) . u_i``: the same family of linear gates of the child's
    pose wherever ``W1_ij`` has full column rank (vote size ``d`` at least the pose size, as in
    SR-CapsNet's 16-to-16 layers), with ``d`` weights per child and parent instead of the pose size.
    The scores read each example's votes scaled down to ``max|u| <= 1e15`` when larger
    (:func:`~keras_capsules.routing.base.limit_votes`), and both divisions are floored at 1e-20 (the
    code divides with no floor), so that all-zero activations give zero parents, never NaN.

    Args:
        iterations: must be 1 (a single pass). Defaults to 1.
        kernel_initializer: of ``W``. Defaults to ``"zeros"`` (the official code).
        bias_initializer: of ``b``. Defaults to ``"zeros"`` (the official code).
        **kwargs: ``quantize_levels``, ``jit_compile`` (see :class:`Router`) and the
            ``keras.layers.Layer`` arguments.

    Example:
        >>> router = SelfRoutingRouter()
        >>> votes, activations = keras.random.normal((4, 288, 32, 16)), keras.random.uniform((4, 288))
        >>> poses, out_activations = router(votes, activations)  # (4, 32, 16), (4, 32)

    See the routers reference (docs/reference/routers.md#self-routing) and docs/routers/self_routing.md.
    """

    iterative = False

    def __init__(self, iterations=1, kernel_initializer="zeros", bias_initializer="zeros", **kwargs):
        super().__init__(iterations=iterations, **kwargs)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)

    def build_router(self, votes_shape):
        _, in_caps, out_caps, out_dim = votes_shape
        if None in (in_caps, out_caps, out_dim):
            errors.fail(self, "votes", "known in_caps, out_caps and out_dim", f"shape {votes_shape}")
        self.routing_kernel = self.add_weight(
            name="routing_kernel",
            shape=(in_caps, out_caps, out_dim),
            initializer=self.kernel_initializer,
            dtype="float32",
        )
        self.routing_bias = self.add_weight(
            name="routing_bias", shape=(in_caps, out_caps), initializer=self.bias_initializer, dtype="float32"
        )

    def route(self, votes, activations, training):
        if activations is None:
            activations = ones_activations(votes)
        kernel = ops.cast(self.routing_kernel, "float32")
        logits = ops.einsum("biod,iod->bio", limit_votes(votes), kernel) + ops.cast(self.routing_bias, "float32")
        coupling = self.finalize_coupling(ops.softmax(logits, axis=2), training)
        weighted = ops.expand_dims(activations, -1) * coupling  # a_i c_ij, (batch, in, out)
        used = ops.sum(weighted, axis=1)  # sum_i a_i c_ij, (batch, out)
        out_acts = used / ops.maximum(ops.sum(activations, axis=1, keepdims=True), TINY)
        poses = ops.einsum("bio,biod->bod", weighted / ops.maximum(ops.expand_dims(used, 1), TINY), votes)
        return poses, out_acts, coupling

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
