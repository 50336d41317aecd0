"""Similarity-learning (kernel) routing of seed 001, "Learning to compute inner consensus" (docs/reference/routers.md#kernel-routing)."""

import functools
import math

import keras
import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.ops.norms import clip_magnitude
from keras_capsules.ops.remat import remat_reading
from keras_capsules.ops.trig import polynomial_cos
from keras_capsules.routing.base import Router, child_major, coupling_full, ones_activations, weighted_votes
from keras_capsules.routing.registry import register_router

KERNELS = ("spectral_mixture", "gaussian_mixture")
ACTIVATIONS = ("sigmoid", "linear")

#: Pose differences are clipped to this magnitude before the kernel: beyond it every kernel term is
#: exp(-huge) = 0, and the clip keeps tau^2 (and its gradient) finite in float32.
_MAX_DISTANCE = 1e12


def _initializer(value, default):
    return keras.initializers.get(default if value is None else value)


def _serialize(initializer):
    return keras.initializers.serialize(initializer)


def _fresh(initializer):
    """A new instance of ``initializer``: an unseeded Keras initializer draws the same values at every
    call, so weights that share one (``t1`` and ``t3``, ``m`` and ``nu``) get their own copy."""
    return type(initializer).from_config(initializer.get_config())


@register_router("kernel")
class KernelRouter(Router):
    """Similarity-learning routing: compatibilities from a learned kernel, normalised over the **inputs**.

    Each parent ``j`` solves (seed 001, eqs. 2-12, reconstructed in docs/reference/routers.md#kernel-routing)
    ``max_{mu, c in simplex} sum_i c_i k(mu, v_i) - l1 KL(c | uniform) - l2 KL(c | a)`` by
    alternating its two closed-form steps, ``iterations`` times:

    - compatibility (mu fixed): ``c_ij = (a_i + 0.1)^(l2_j/l_j) exp(k_ij / l_j) / sum_i' (...)``
      with ``l_j = |l1_j| + |l2_j| + 1e-6`` and ``k_ij = K(mu_j, v_j|i)``;
    - pose (c fixed): ``mu_j = sum_i c_ij v_j|i / sum_i c_ij``.

    Initial state: ``c_ij = 1/n`` (uniform over the ``n`` children), ``mu_j = sum_i c_ij v_j|i``
    (the mean vote). After the last iteration the activation is (the latest code, id 5762855100)
    ``a_j = sigmoid(t1_j sum_i c_ij k_ij + |t3_j| sum_i c_ij log(a_i + epsilon) + t2_j)``; the
    ``k_ij`` are those of the last compatibility step (computed with the previous ``mu``), as in the
    code. ``activation_prior=False`` drops the ``t3`` term (the paper's eq. 13,
    ``sigmoid(t1 sum_i c_i k_i + t2)``); ``activation="linear"`` returns the logit (the argument of
    the sigmoid) instead, for a class layer trained with softmax cross-entropy (the code's
    ``activate=False``, which is ``t1 raw + t2``, i.e. also ``activation_prior=False``).

    - **Softmax axis: the inputs** (``in_caps``, axis 1): one distribution over the children for
      each parent (attention-like), the reverse of Sabour's softmax over parents.
    - Kernel ``K(mu, v) = sum_q pi_q k_q(mu, v)``, ``pi = softmax(w)`` (``w`` initialised to 1):

      - ``"spectral_mixture"`` (the code, eq. 15 as implemented): with ``tau = mu - v``,
        ``k_q = sum_p exp(-2 pi^2 tau_p^2 |nu_q,p|) cos(2 pi tau_p m_q,p)``; learnable
        ``m_q, nu_q`` in R^dim, truncated-normal(0.1). The code **sums** over pose entries where
        Wilson & Adams multiply; so do we. Each ``k_q`` lies in ``[-dim, dim]``.
      - ``"gaussian_mixture"`` (the paper's words, "a combination of gaussian kernels"):
        ``k_q = exp(-|tau|^2 / (2 ell_q^2))`` with learnable length scales ``ell_q = |.| + 1e-3``,
        initialised an octave apart around 1 (``2^(q - (Q-1)/2)``).
    - Parameters: the kernel's (``Q`` mixture logits, plus ``2 Q dim`` or ``Q``); per output
      capsule channel (``out_caps``) ``l1`` (Normal(12, 0.05)), ``l2`` (1), ``t1``, ``t3``
      (truncated-normal(0.1)) and ``t2`` (1). ``l1, l2`` enter through ``abs()``.
    - Child activations: used in the prior and in the activation; ones when absent; negative
      values are clipped to 0.
    - Safeguards: float32 maths; the compatibility is a softmax of
      ``(l2 log(a + 0.1) + k) / l`` (log space: no overflow of ``exp(k/l)`` or the power);
      ``|nu|`` instead of the code's raw ``nu`` (a negative ``nu`` makes ``exp`` grow with the
      distance and overflow); pose differences clipped to ``1e12``; ``log(a + epsilon)`` in the
      activation instead of the code's ``log(a)`` (``-inf`` at ``a = 0``); the pose divides by
      ``max(sum_i c, 1e-12)``.
    - Layout: the iterations run parent-major (``(batch, out_caps, in_caps, dim)``, one transpose
      per call) so the weighted sums are batched matrix products.
    - Memory: the kernel is accumulated one mixture component at a time (vote-sized temporaries,
      not ``Q`` times that) and, in training, rematerialised (``keras.remat``): the backward pass
      recomputes it, so what a training step keeps per iteration is ``O(batch * out * in)``
      (compatibilities), not the kernel's ``O(batch * out * in * Q * dim)`` temporaries.
    - Differences from the code: the normalisation is the exact softmax (the code divides by
      ``sum + 1e-6``); the code's ``t`` variables are shaped by the output *width* (a bug for conv
      layers, one value for the class layer) where we use one per output channel as the paper says.

    Args:
        iterations: compatibility/pose alternations (paper: 3).
        kernel: ``"spectral_mixture"`` or ``"gaussian_mixture"``.
        num_components: mixture size ``Q`` (paper network: 4 for the conv layers, 10 for the class layer).
        activation: ``"sigmoid"`` or ``"linear"`` (logits).
        activation_prior: include the ``|t3| sum_i c_i log a_i`` term.
        prior_offset: the 0.1 added to child activations inside the power.
        epsilon: added to child activations inside the activation's log.
        lambda1_initializer, lambda2_initializer, theta_initializer, bias_initializer,
        kernel_initializer, mixture_initializer, length_scale_initializer: initializers of
        ``l1``, ``l2``, ``t1`` and ``t3``, ``t2``, ``m`` and ``nu``, ``w``, ``ell``
        (``None`` gives the defaults above).
    """

    accepts_parent_major = True
    compiles_in_training = True

    def __init__(
        self,
        iterations=3,
        kernel="spectral_mixture",
        num_components=4,
        activation="sigmoid",
        activation_prior=True,
        prior_offset=0.1,
        epsilon=1e-6,
        lambda1_initializer=None,
        lambda2_initializer=None,
        theta_initializer=None,
        bias_initializer=None,
        kernel_initializer=None,
        mixture_initializer=None,
        length_scale_initializer=None,
        **kwargs,
    ):
        super().__init__(iterations=iterations, **kwargs)
        self.kernel = errors.check_one_of(self, "kernel", kernel, KERNELS)
        self.num_components = errors.check_positive_int(self, "num_components", num_components)
        self.activation = errors.check_one_of(self, "activation", activation, ACTIVATIONS)
        self.activation_prior = bool(activation_prior)
        self.prior_offset = float(prior_offset)
        if self.prior_offset <= 0:
            errors.fail(self, "prior_offset", "a number > 0", prior_offset)
        self.epsilon = float(epsilon)
        if self.epsilon <= 0:
            errors.fail(self, "epsilon", "a number > 0", epsilon)
        self.lambda1_initializer = _initializer(
            lambda1_initializer, {"class_name": "RandomNormal", "config": {"mean": 12.0, "stddev": 0.05}}
        )
        self.lambda2_initializer = _initializer(lambda2_initializer, "ones")
        self.theta_initializer = _initializer(
            theta_initializer, {"class_name": "TruncatedNormal", "config": {"stddev": 0.1}}
        )
        self.bias_initializer = _initializer(bias_initializer, "ones")
        self.kernel_initializer = _initializer(
            kernel_initializer, {"class_name": "TruncatedNormal", "config": {"stddev": 0.1}}
        )
        self.mixture_initializer = _initializer(mixture_initializer, "ones")
        self.length_scale_initializer = (
            None if length_scale_initializer is None else keras.initializers.get(length_scale_initializer)
        )

    def _weight(self, name, shape, initializer):
        # float32 whatever the dtype policy: the routing maths are float32, and e.g. the orthogonal
        # initializer has no bfloat16 kernel.
        return self.add_weight(name=name, shape=shape, initializer=initializer, dtype="float32")

    def build_router(self, votes_shape):
        _, in_caps, out_caps, out_dim = votes_shape
        if None in (in_caps, out_caps, out_dim):
            errors.fail(self, "votes", "known in_caps, out_caps and out_dim", f"shape {votes_shape}")
        q = self.num_components
        self.mixture_logits = self._weight(name="mixture_logits", shape=(q,), initializer=self.mixture_initializer)
        if self.kernel == "spectral_mixture":
            self.frequencies = self._weight(
                name="frequencies", shape=(q, out_dim), initializer=_fresh(self.kernel_initializer)
            )
            self.bandwidths = self._weight(
                name="bandwidths", shape=(q, out_dim), initializer=_fresh(self.kernel_initializer)
            )
        else:
            initializer = self.length_scale_initializer or "ones"
            self.length_scales = self._weight(name="length_scales", shape=(q,), initializer=initializer)
            if self.length_scale_initializer is None:
                self.length_scales.assign(np.exp2(np.arange(q) - (q - 1) / 2.0).astype("float32"))
        self.lambda1 = self._weight(name="lambda1", shape=(out_caps,), initializer=self.lambda1_initializer)
        self.lambda2 = self._weight(name="lambda2", shape=(out_caps,), initializer=self.lambda2_initializer)
        self.theta1 = self._weight(name="theta1", shape=(out_caps,), initializer=_fresh(self.theta_initializer))
        self.theta2 = self._weight(name="theta2", shape=(out_caps,), initializer=self.bias_initializer)
        self.theta3 = self._weight(name="theta3", shape=(out_caps,), initializer=_fresh(self.theta_initializer))

    def similarity(self, poses, votes, cos=ops.cos):
        """The kernel ``K(mu_j, v_j|i)``, in the parent-major layout the router iterates in.

        Accumulated one mixture component at a time, so the largest temporaries are vote-sized
        ``(batch, out_caps, in_caps, dim)`` rather than ``Q`` times that; every op is a LiteRT
        built-in (no 5-D ``einsum``). Work per (child, parent): ``Q * dim`` exp and cos for the
        spectral mixture, ``dim`` squares and ``Q`` exp for the Gaussian one.

        Args:
            poses: ``(batch, out_caps, dim)``.
            votes: ``(batch, out_caps, in_caps, dim)``.
            cos: the cosine (:func:`~keras_capsules.ops.trig.polynomial_cos` where XLA compiles it).

        Returns:
            ``(batch, out_caps, in_caps)``.
        """
        tau = clip_magnitude(ops.expand_dims(poses, 2) - votes, _MAX_DISTANCE)
        weights = ops.softmax(ops.cast(self.mixture_logits, "float32"))
        if self.kernel == "spectral_mixture":
            bandwidths = ops.abs(ops.cast(self.bandwidths, "float32"))
            frequencies = ops.cast(self.frequencies, "float32")
            decay, phase = -2.0 * math.pi**2 * ops.square(tau), 2.0 * math.pi * tau
            total = 0.0
            for q in range(self.num_components):
                term = ops.exp(decay * bandwidths[q]) * cos(phase * frequencies[q])
                total = total + weights[q] * ops.sum(term, axis=-1)
            return total
        scales = ops.abs(ops.cast(self.length_scales, "float32")) + 1e-3
        distances = ops.sum(ops.square(tau), axis=-1, keepdims=True)  # (b, o, i, 1)
        return ops.sum(ops.exp(-distances / (2.0 * ops.square(scales))) * weights, axis=-1)

    def route_parent_major(self, votes, activations, training):
        in_caps = votes.shape[2]  # votes (b, o, i, d): the iterations are batched matrix products
        if activations is None:
            activations = ones_activations(votes, in_axis=2)
        activations = ops.expand_dims(ops.maximum(activations, 0.0), 1)  # (b, 1, i)
        lambda1 = ops.abs(ops.cast(self.lambda1, "float32"))
        lambda2 = ops.abs(ops.cast(self.lambda2, "float32"))
        total = ops.expand_dims(lambda1 + lambda2 + 1e-6, -1)  # (o, 1)
        prior = ops.log(activations + self.prior_offset) * (ops.expand_dims(lambda2, -1) / total)  # (b, o, i)

        coupling = coupling_full(votes, 1.0 / in_caps)
        poses = weighted_votes(coupling, votes)
        # Training recomputes each kernel evaluation in the backward pass instead of keeping its
        # vote-sized temporaries, so memory does not grow with the iterations.
        # XLA's CPU cosine is a scalar call: compiled code takes the polynomial one, which it vectorises.
        compiled = self.compiles(training) or keras.backend.backend() == "jax"
        similarity = functools.partial(self.similarity, cos=polynomial_cos if compiled else ops.cos)
        similarity = remat_reading(similarity, self.weights) if training else similarity
        for step in range(self.iterations):
            agreement = similarity(poses, votes)
            coupling = ops.softmax(prior + agreement / total, axis=2)
            if step == self.iterations - 1:
                coupling = self.finalize_coupling(coupling, training)
            mass = ops.maximum(ops.sum(coupling, axis=2), 1e-12)
            poses = weighted_votes(coupling, votes) / ops.expand_dims(mass, -1)

        raw = ops.sum(coupling * agreement, axis=2)
        logits = ops.cast(self.theta1, "float32") * raw + ops.cast(self.theta2, "float32")
        if self.activation_prior:
            log_acts = ops.log(activations + self.epsilon)
            logits = logits + ops.abs(ops.cast(self.theta3, "float32")) * ops.sum(coupling * log_acts, axis=2)
        out_acts = ops.sigmoid(logits) if self.activation == "sigmoid" else logits
        return poses, out_acts, child_major(coupling)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "kernel": self.kernel,
                "num_components": self.num_components,
                "activation": self.activation,
                "activation_prior": self.activation_prior,
                "prior_offset": self.prior_offset,
                "epsilon": self.epsilon,
                "lambda1_initializer": _serialize(self.lambda1_initializer),
                "lambda2_initializer": _serialize(self.lambda2_initializer),
                "theta_initializer": _serialize(self.theta_initializer),
                "bias_initializer": _serialize(self.bias_initializer),
                "kernel_initializer": _serialize(self.kernel_initializer),
                "mixture_initializer": _serialize(self.mixture_initializer),
                "length_scale_initializer": None
                if self.length_scale_initializer is None
                else _serialize(self.length_scale_initializer),
            }
        )
        return config
