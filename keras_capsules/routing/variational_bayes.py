"""Variational-Bayes routing (Ribeiro, Leontidis & Kollias 2020), as the authors' code implements it (docs/reference/routers.md#variational-bayes-routing)."""

import math

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.routing.base import (
    Router,
    child_major,
    coupling_full,
    limit_votes,
    ones_activations,
    vote_agreement,
    weighted_votes,
)
from keras_capsules.routing.positions import CrossPositionRouting
from keras_capsules.routing.registry import register_router

#: The authors' BatchNorm (PyTorch's defaults) in Keras' terms: momentum 0.9 (PyTorch's 0.1) and epsilon 1e-5.
_NORM_MOMENTUM = 0.9
_NORM_EPSILON = 1e-5
#: Votes are scaled per example into +-1e8 (:func:`~keras_capsules.routing.base.limit_votes`): squared distances
#: (1e16) and the products of the backward pass (below ~1e34) stay finite in float32. At 1e15, the library's
#: default limit, the backward pass of the responsibilities overflows. Votes this large make the prior negligible,
#: so the responsibilities change only by rounding; the poses come out in the scaled units, as with every router
#: that limits its votes.
_VOTE_LIMIT = 1e8


def digamma(x):
    """The digamma function ``psi(x)`` for ``x >= 0.5`` with ``keras.ops`` (which has no digamma).

    Six steps of the recurrence ``psi(x) = psi(x + 6) - sum_{k<6} 1 / (x + k)``, then the asymptotic series
    ``psi(y) ~ ln y - 1 / (2y) - 1 / (12y^2) + 1 / (120y^4) - 1 / (252y^6)`` at ``y = x + 6 >= 6.5``: an error
    below 1e-9, under float32's rounding.
    """
    shift = sum(1.0 / (x + k) for k in range(6))
    y = x + 6.0
    inv2 = 1.0 / (y * y)
    series = ops.log(y) - 0.5 / y - inv2 * (1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 / 252.0))
    return series - shift


@register_router("variational_bayes")
class VariationalBayesRouter(CrossPositionRouting, Router):
    """Variational-Bayes routing (Ribeiro, Leontidis & Kollias 2020), following the authors' PyTorch code.

    The parents are the components of a mixture of transforming Gaussians with a Dirichlet prior
    ``Dir(pi | alpha0)`` on the mixing coefficients and a Gaussian-Wishart prior
    ``N(mu_j | m0, (kappa0 Lambda_j)^-1) W(Lambda_j | Psi0, nu0)`` on each parent's mean and (diagonal) precision;
    routing is mean-field variational inference. With votes ``V`` ``(batch, in_caps, out_caps, d)`` (flattened
    ``p x p`` matrices, or vectors) and child activations ``a`` ``(batch, in_caps)`` (ones when absent),
    ``R_ij = 1 / out_caps`` at first, and for ``t = 0 .. iterations - 1``:

        q(mu, Lambda), q(pi)  (per parent j, per pose dimension h)
            N_j = sum_i R_ij a_i;   alpha_j = alpha0 + N_j;   kappa_j = kappa0 + N_j;   nu_j = nu0 + N_j
            xbar_j = sum_i R_ij a_i V_ij / N_j;   S_jh = sum_i R_ij a_i (V_ijh - xbar_jh)^2
            m_j = (N_j xbar_j + kappa0 m0) / kappa_j
            Psi_jh^-1 = 1 / psi0 + S_jh + kappa0 N_j / kappa_j (xbar_jh - m0)^2
        q(z)  (skipped after the last update)
            E[ln pi_j] = digamma(alpha_j) - digamma(sum_k alpha_k)
            E[ln |Lambda_j|] = sum_{h<d} digamma((nu_j - h) / 2) + d ln 2 - sum_h ln Psi_jh^-1
            E[(V_ij - mu_j)' Lambda_j (V_ij - mu_j)] = d / kappa_j + nu_j sum_h (V_ijh - m_jh)^2 / Psi_jh^-1
            R_ij = softmax over the parents j of (E[ln pi_j] + E[ln |Lambda_j|] / 2 - d ln(2 pi) / 2 - E[...] / 2)

    The parents' activations are a logistic of their negative posterior entropy
    ``H_j = d ln(2 pi e) / 2 - E[ln |Lambda_j|] / 2``, weighted by ``exp(E[ln pi_j])``:

        a_j = sigmoid(BN(beta_a_j - (exp(E[ln pi_j]) H_j + beta_u_j)))      poses = BN(m_j)

    where ``BN`` is the code's batch normalisation without scale or offset, per parent type over the batch
    (and, for the poses, the pose dimensions): convolutional layers fold positions into the batch, so the
    statistics run over positions too, as the code's ``BatchNorm2d``/``BatchNorm3d``. The weights are
    ``beta_a`` and ``beta_u``, one per output type (zeros at first, as in the code), and the two norms' moving
    statistics. The outputs are ``m_j`` (normalised), ``a_j`` and, on request, the coupling ``R`` used by the
    last update.

    Convolutional layers fold the output positions into the batch, so by default a child's responsibilities
    are normalised over the parent types at its position. Given the layer's geometry (``child_grid`` and the
    rest) the router takes ``votes`` ``(batch * H_out * W_out, K*K*types, out_caps, d)`` as
    :class:`~keras_capsules.layers.ConvCaps` makes them and normalises each child over every parent position
    and type it feeds, as the code does in its convolutional layers (``R`` still starts at ``1 / out_caps``,
    the code's); ``ConvCaps`` then routes the whole vote tensor at once.

    Differences from the code, each with a reason: ``d`` is the pose size (the code takes ``max(2, d)``,
    which only matters for 1-dimensional poses); the prior terms the code drops
    because its priors are ``m0 = 0``, ``kappa0 = 1`` and ``Psi0 = I`` are kept, so other priors are correct
    (with those defaults the equations are the code's); ``N_j`` in ``xbar_j`` is ``N_j + epsilon`` (the code
    divides by ``N_j``, NaN when every child of a parent is inactive); votes are scaled per example into
    ``+-1e8`` (:func:`~keras_capsules.routing.base.limit_votes`) so that squared distances and their gradients stay
    finite in float32.

    Args:
        iterations: updates of the parents' posteriors. Defaults to 3 (the code's default).
        alpha0: the Dirichlet prior's concentration. Defaults to 1.
        kappa0: the prior's precision scaling of the parent means. Defaults to 1.
        m0: the prior mean of every pose entry. Defaults to 0.
        psi0: the Wishart prior's scale ``Psi0 = psi0 I``. Defaults to 1.
        nu0: the Wishart prior's degrees of freedom, above ``d - 1``; ``None`` for ``d + 1`` (the code's).
            Defaults to ``None``.
        batch_norm: normalise the poses and the activation logits as the code does. Defaults to ``True``.
        epsilon: added to ``N_j`` where it divides. Defaults to 1e-9.
        child_grid: ``None``, or the ``(H, W)`` input grid of the convolutional layer to normalise across
            positions. Defaults to ``None``.
        kernel_size, strides, padding: that layer's geometry, used with ``child_grid`` only. Default to
            1, 1 and ``"valid"``.
        **kwargs: ``quantize_levels`` and ``jit_compile`` (see :class:`Router`; ``jit_compile=True`` needs
            ``batch_norm=False``, since the norms update their moving statistics in the step) and the
            ``keras.layers.Layer`` arguments.

    Example:
        >>> router = VariationalBayesRouter(iterations=3)
        >>> votes, activations = keras.random.normal((4, 72, 5, 16)), keras.random.uniform((4, 72))
        >>> poses, out_activations = router(votes, activations)  # (4, 5, 16), (4, 5)

    See the routers reference (docs/reference/routers.md#variational-bayes-routing) and
    docs/routers/variational_bayes.md.
    """

    accepts_parent_major = True

    def __init__(
        self,
        iterations=3,
        alpha0=1.0,
        kappa0=1.0,
        m0=0.0,
        psi0=1.0,
        nu0=None,
        batch_norm=True,
        epsilon=1e-9,
        child_grid=None,
        kernel_size=1,
        strides=1,
        padding="valid",
        **kwargs,
    ):
        super().__init__(iterations=iterations, **kwargs)
        for argument, value in (("alpha0", alpha0), ("kappa0", kappa0), ("psi0", psi0), ("epsilon", epsilon)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                errors.fail(self, argument, "a positive float", value)
        if isinstance(m0, bool) or not isinstance(m0, (int, float)) or not math.isfinite(m0):
            errors.fail(self, "m0", "a finite float", m0)
        if nu0 is not None and (isinstance(nu0, bool) or not isinstance(nu0, (int, float)) or not nu0 > 0):
            errors.fail(self, "nu0", "None or a float above d - 1", nu0)
        if not isinstance(batch_norm, bool):
            errors.fail(self, "batch_norm", "True or False", batch_norm, TypeError)
        if batch_norm and self.jit_compile:
            errors.fail(self, "jit_compile", "None or False with batch_norm=True (moving statistics)", True)
        self.alpha0 = float(alpha0)
        self.kappa0 = float(kappa0)
        self.m0 = float(m0)
        self.psi0 = float(psi0)
        self.nu0 = None if nu0 is None else float(nu0)
        self.batch_norm = batch_norm
        self.epsilon = float(epsilon)
        self.init_child_grid(child_grid, kernel_size, strides, padding)
        if batch_norm:
            norm = {"center": False, "scale": False, "momentum": _NORM_MOMENTUM, "epsilon": _NORM_EPSILON}
            self.pose_norm = keras.layers.BatchNormalization(axis=1, dtype="float32", name="pose_norm", **norm)
            self.logit_norm = keras.layers.BatchNormalization(axis=1, dtype="float32", name="logit_norm", **norm)

    def build_router(self, votes_shape):
        _, in_caps, out_caps, out_dim = votes_shape
        if in_caps is None or out_caps is None or out_dim is None:
            errors.fail(self, "votes", "known in_caps, out_caps and out_dim", f"shape {tuple(votes_shape)}")
        if self.nu0 is not None and not self.nu0 > out_dim - 1:
            errors.fail(self, "nu0", f"None or a float above d - 1 = {out_dim - 1}", self.nu0)
        self.build_child_grid(votes_shape)
        self.beta_a = self.add_weight(name="beta_a", shape=(out_caps,), initializer="zeros")
        self.beta_u = self.add_weight(name="beta_u", shape=(out_caps,), initializer="zeros")
        if self.batch_norm:
            self.pose_norm.build((None, out_caps, out_dim))
            self.logit_norm.build((None, out_caps))

    def prior_dof(self, out_dim):
        """``nu0``: the given one, or ``d + 1``."""
        return out_dim + 1.0 if self.nu0 is None else self.nu0

    # ---- the updates, in the parent-major layout (batch, out, in[, dim]) of base.parent_major ----

    def _update_parameters(self, coupling, votes, activations):
        """``q(mu, Lambda)`` and ``q(pi)`` from ``coupling`` ``(batch, out, in)``: ``(alpha, kappa, nu)`` ``(batch, out)``, ``m`` and ``Psi^-1`` ``(batch, out, d)``."""
        weighted = coupling * activations[:, None, :]
        mass = ops.sum(weighted, axis=2)  # N_j
        mean = weighted_votes(weighted, votes) / (mass + self.epsilon)[:, :, None]  # xbar_j
        scatter = weighted_votes(weighted, ops.square(votes - mean[:, :, None]))  # S_j
        kappa = self.kappa0 + mass
        shrink = (self.kappa0 * mass / kappa)[:, :, None]
        inverse_scale = 1.0 / self.psi0 + scatter + shrink * ops.square(mean - self.m0)
        m = (mass[:, :, None] * mean + self.kappa0 * self.m0) / kappa[:, :, None]
        return self.alpha0 + mass, kappa, self.prior_dof(votes.shape[-1]) + mass, m, inverse_scale

    @staticmethod
    def _expected_logs(alpha, nu, inverse_scale):
        """``E[ln pi_j]`` and ``E[ln |Lambda_j|]``, ``(batch, out)`` each."""
        out_dim = inverse_scale.shape[-1]
        log_pi = digamma(alpha) - digamma(ops.sum(alpha, axis=1, keepdims=True))
        offsets = ops.arange(out_dim, dtype="float32") * 0.5
        log_det = ops.sum(digamma(0.5 * nu[:, :, None] - offsets), axis=-1) + out_dim * math.log(2.0)
        return log_pi, log_det - ops.sum(ops.log(inverse_scale), axis=-1)

    def _responsibilities(self, votes, kappa, nu, m, inverse_scale, log_pi, log_det):
        """``q(z)``: the new coupling ``(batch, out, in)``, normalised over each child's parents (:meth:`parent_softmax`)."""
        out_dim = votes.shape[-1]
        distance = vote_agreement(ops.square(votes - m[:, :, None]), 1.0 / inverse_scale)
        distance = (out_dim / kappa)[:, :, None] + nu[:, :, None] * distance
        offset = log_pi + 0.5 * log_det - 0.5 * out_dim * math.log(2.0 * math.pi)
        return self.parent_softmax(offset[:, :, None] - 0.5 * distance)

    def route_parent_major(self, votes, activations, training):
        votes = limit_votes(votes, _VOTE_LIMIT)
        if activations is None:
            activations = ones_activations(votes, in_axis=2)
        coupling = coupling_full(votes, 1.0 / votes.shape[1])
        for step in range(self.iterations):
            last = step == self.iterations - 1
            if last:
                coupling = self.finalize_coupling(coupling, training)
            alpha, kappa, nu, m, inverse_scale = self._update_parameters(coupling, votes, activations)
            log_pi, log_det = self._expected_logs(alpha, nu, inverse_scale)
            if not last:
                coupling = self._responsibilities(votes, kappa, nu, m, inverse_scale, log_pi, log_det)
        out_dim = votes.shape[-1]
        entropy = 0.5 * out_dim * math.log(2.0 * math.pi * math.e) - 0.5 * log_det
        logits = ops.cast(self.beta_a, "float32") - (ops.exp(log_pi) * entropy + ops.cast(self.beta_u, "float32"))
        if self.batch_norm:
            m = self.pose_norm(m, training=training)
            logits = self.logit_norm(logits, training=training)
        return m, ops.sigmoid(logits), child_major(coupling)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "alpha0": self.alpha0,
                "kappa0": self.kappa0,
                "m0": self.m0,
                "psi0": self.psi0,
                "nu0": self.nu0,
                "batch_norm": self.batch_norm,
                "epsilon": self.epsilon,
                **self.child_grid_config(),
            }
        )
        return config
