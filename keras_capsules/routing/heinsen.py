"""Heinsen routing (Heinsen 2019, "An Algorithm for Routing Capsules in All Domains") (docs/reference/routers.md#heinsen-routing)."""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.routing.base import Router, limit_votes, ones_activations
from keras_capsules.routing.registry import register_router

_PROBABILITY_MODELS = ("gaussian", "soft_kmeans")


@register_router("heinsen")
class HeinsenRouter(Router):
    """Heinsen's EM-like routing with learned "use" and "ignore" gains per child and parent (Heinsen 2019).

    Every child ``i`` casts a vote ``V_ij`` for every parent ``j``; a parent is a diagonal Gaussian over
    the votes it uses. Each child's activation ``f(a_i)`` (a probability) is split into the share that
    uses a parent, ``D_use = f(a_i) R_ij``, and the share that ignores it, ``D_ign = f(a_i) - D_use``; the
    parent's score rewards the first and penalises the second with learned gains. With votes ``V``
    ``(batch, in_caps, out_caps, d)`` (a flattened ``d_cov x d_out`` matrix, or a vector: ``d_cov = 1``),
    child activations ``f(a)`` ``(batch, in_caps)`` in [0, 1] (ones when absent) and ``R = 1 / out_caps``
    at first, for ``t = 0 .. iterations - 1``:

        E-step (t > 0)  R_ij = softmax over the parents j of (log f(a_out_j) + log p_ij)
        D-step          D_use_ij = f(a_i) R_ij,   D_ign_ij = f(a_i) - D_use_ij
        M-step          a_out_j = sum_i beta_use_ij D_use_ij - sum_i beta_ign_ij D_ign_ij        (batch, out_caps)
                        mu_j    = sum_i D_use_ij V_ij / (sum_i D_use_ij + epsilon)              (batch, out_caps, d)
                        sig2_j  = sum_i D_use_ij (V_ij - mu_j)^2 / (sum_i D_use_ij + epsilon) + epsilon

    where ``f`` is the logistic function and ``log p_ij`` is, with ``probability_model="gaussian"``, the
    Gaussian log-likelihood without its constant, ``-sum_h ((V_ijh - mu_jh)^2 / (2 sig2_jh) + log(sig2_jh) / 2)``,
    or, with ``"soft_kmeans"``, ``log_softmax_j(-sum_h (V_ijh - mu_jh)^2)``. The outputs are the means
    ``mu`` ``(batch, out_caps, d)``, the activations ``f(a_out)`` ``(batch, out_caps)`` and, on request, the
    coupling ``R`` ``(batch, in_caps, out_caps)`` of the last D-step (each child's row sums to 1).

    Mapping onto the router contract. The paper computes the votes inside the routing layer,
    ``V_ij = mu_i W_ij + B_ij`` from ``d_cov x d_inp`` child poses; here the capsule layer computes
    ``mu_i W_ij`` (``transform="matrix"``, the default ``side="right"``, is exactly the paper's product for
    square poses; ``transform="vector"`` is its ``d_cov = 1`` case) and the router adds the vote bias
    ``B_ij`` (``vote_bias=True``). The paper takes child *scores* ``a_i`` in logit form and applies ``f``
    itself; the library's child activations are probabilities, so they are ``f(a_i)`` directly (a score
    ``a_i`` is the activation's logit, ``log(p / (1 - p))``: activation 0 is a padding child, score
    ``-inf``). Likewise the router returns ``f(a_out)`` where the paper returns the scores ``a_out``; the
    score is ``log(p / (1 - p))`` of the returned activation (a classifier trained, as the paper's, with
    a softmax cross-entropy on the class scores takes that logit). The paper's per-parent variances
    ``sig2`` are not returned (the contract has no place for them).

    Weights: ``beta_use`` and ``beta_ign`` ``(in_caps, out_caps)`` and the vote bias ``B``
    ``(in_caps, out_caps, d)``, all zeros at first as in the official code; with ``share_children=True``
    one of each per parent, ``(1, out_caps)`` and ``(1, out_caps, d)``, shared by every child (the code's
    layer without a fixed number of inputs, which the smallNORB network's first routing is; the router
    then takes any number of children). ``single_beta=True`` makes ``beta_ign`` the same weight as
    ``beta_use``.

    Numerical safeguards: the votes are first scaled per example so that ``max |V| <= 1e15``
    (:func:`~keras_capsules.routing.base.limit_votes`; votes within that are unchanged), so the squared
    deviations and their ratio to ``sig2 >= epsilon`` stay finite in float32; activations are clipped to
    [0, 1]; ``log f(a_out)`` is the stable ``log_sigmoid``. The routing runs in float32 whatever the
    compute dtype.

    The 2022 follow-up ("An Algorithm for Routing Vectors in Sequences", the code's
    ``EfficientVectorRouting``) replaces the Gaussians by a dot-product agreement in a learned projection
    and predicts the input vectors themselves, so it is a layer, ``keras_capsules.layers.VectorRouting``,
    not this router (docs/routers/heinsen.md).

    Args:
        iterations: routing iterations (M-steps; ``iterations - 1`` E-steps). Defaults to 3 (the paper's
            ``n_iters``).
        share_children: one ``beta_use``, ``beta_ign`` and vote bias per parent for every child, instead
            of one per child and parent. Defaults to ``False``.
        single_beta: ``beta_ign`` is ``beta_use``. Defaults to ``False`` (the code's default).
        vote_bias: add the learned bias ``B`` to the votes. Defaults to ``True`` (the paper's votes have it).
        probability_model: ``"gaussian"`` (the paper's mixtures) or ``"soft_kmeans"`` (the code's
            ``p_model='skm'``). Defaults to ``"gaussian"``.
        epsilon: in the M-step denominators and added to every variance. Defaults to 1e-5 (the code's ``eps``).
        beta_initializer: initializer of ``beta_use`` and ``beta_ign``. Defaults to ``"zeros"``.
        bias_initializer: initializer of the vote bias. Defaults to ``"zeros"``.
        **kwargs: ``quantize_levels``, ``jit_compile`` (see :class:`Router`) and the
            ``keras.layers.Layer`` arguments.

    Example:
        >>> router = HeinsenRouter(iterations=3)
        >>> votes, activations = keras.random.normal((4, 64, 5, 16)), keras.random.uniform((4, 64))
        >>> poses, out_activations = router(votes, activations)  # (4, 5, 16), (4, 5)

    See the routers reference (docs/reference/routers.md#heinsen-routing) and docs/routers/heinsen.md.
    """

    def __init__(
        self,
        iterations=3,
        share_children=False,
        single_beta=False,
        vote_bias=True,
        probability_model="gaussian",
        epsilon=1e-5,
        beta_initializer="zeros",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(iterations=iterations, **kwargs)
        for argument, value in (
            ("share_children", share_children),
            ("single_beta", single_beta),
            ("vote_bias", vote_bias),
        ):
            if not isinstance(value, bool):
                errors.fail(self, argument, "True or False", value, TypeError)
        self.share_children = share_children
        self.single_beta = single_beta
        self.vote_bias = vote_bias
        self.probability_model = errors.check_one_of(self, "probability_model", probability_model, _PROBABILITY_MODELS)
        if not errors.is_number(epsilon) or not epsilon > 0:
            errors.fail(self, "epsilon", "a positive float", epsilon)
        self.epsilon = float(epsilon)
        self.beta_initializer = keras.initializers.get(beta_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)

    def build_router(self, votes_shape):
        _, in_caps, out_caps, out_dim = votes_shape
        if out_caps is None or out_dim is None or (in_caps is None and not self.share_children):
            expected = "known out_caps and out_dim" + ("" if self.share_children else " and in_caps")
            errors.fail(self, "votes", expected, f"shape {tuple(votes_shape)}")
        children = 1 if self.share_children else in_caps
        self.beta_use = self.add_weight(name="beta_use", shape=(children, out_caps), initializer=self.beta_initializer)
        self.beta_ign = None
        if not self.single_beta:
            self.beta_ign = self.add_weight(
                name="beta_ign", shape=(children, out_caps), initializer=self.beta_initializer
            )
        self.bias = None
        if self.vote_bias:
            self.bias = self.add_weight(
                name="vote_bias", shape=(children, out_caps, out_dim), initializer=self.bias_initializer
            )

    def route(self, votes, activations, training):
        votes = limit_votes(votes)
        if self.bias is not None:
            votes = votes + ops.cast(self.bias, "float32")
        if activations is None:
            activations = ones_activations(votes)
        use_share = ops.expand_dims(ops.clip(activations, 0.0, 1.0), -1)  # f(a_i), (batch, in_caps, 1)
        coupling = ops.full((ops.shape(votes)[0],) + tuple(votes.shape[1:3]), 1.0 / votes.shape[2], dtype=votes.dtype)
        for t in range(self.iterations):
            if t == self.iterations - 1:
                coupling = self.finalize_coupling(coupling, training)
            scores, means, deviations, variances = self.m_step(votes, use_share, coupling)
            if t < self.iterations - 1:  # E-step
                parent_logits = ops.expand_dims(ops.log_sigmoid(scores), 1)
                coupling = ops.softmax(parent_logits + self.log_likelihood(deviations, variances), axis=2)
        return means, ops.sigmoid(scores), coupling

    def m_step(self, votes, use_share, coupling):
        """The D- and M-steps: scores ``a_out`` ``(batch, out)``, means, squared deviations ``(V - mu)^2`` and variances."""
        d_use = use_share * coupling
        d_ign = use_share - d_use
        beta_use = ops.cast(self.beta_use, "float32")
        beta_ign = beta_use if self.single_beta else ops.cast(self.beta_ign, "float32")
        scores = ops.sum(beta_use * d_use, axis=1) - ops.sum(beta_ign * d_ign, axis=1)
        weights = ops.expand_dims(d_use / (ops.sum(d_use, axis=1, keepdims=True) + self.epsilon), -1)
        means = ops.sum(weights * votes, axis=1)
        deviations = ops.square(votes - ops.expand_dims(means, 1))
        variances = ops.sum(weights * deviations, axis=1) + self.epsilon
        return scores, means, deviations, variances

    def log_likelihood(self, deviations, variances):
        """``log p_ij`` ``(batch, in, out)`` of every vote under every parent (without the Gaussian's constant)."""
        if self.probability_model == "soft_kmeans":
            return ops.log_softmax(-ops.sum(deviations, axis=-1), axis=2)
        variances = ops.expand_dims(variances, 1)
        return -ops.sum(deviations / (2.0 * variances) + 0.5 * ops.log(variances), axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "share_children": self.share_children,
                "single_beta": self.single_beta,
                "vote_bias": self.vote_bias,
                "probability_model": self.probability_model,
                "epsilon": self.epsilon,
                "beta_initializer": keras.initializers.serialize(self.beta_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
