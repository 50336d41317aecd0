"""Similarity-learning (kernel) routing of the inner-consensus paper (docs/reference/routers.md#kernel-routing).

The paper: *Learning to compute inner consensus: a novel approach to modeling agreement between capsules*.
"""

import functools
import math

import keras
import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.ops.broadcast import broadcast_rows
from keras_capsules.ops.norms import clip_magnitude
from keras_capsules.ops.remat import remat_reading
from keras_capsules.ops.trig import polynomial_cos
from keras_capsules.routing.base import Router, child_major, coupling_full, ones_activations, weighted_votes
from keras_capsules.routing.registry import register_router

KERNELS = ("spectral_mixture", "gaussian_mixture")
ACTIVATIONS = ("sigmoid", "linear")

#: Mixture components per expression in compiled training. Chosen in a probe of the spectral mixture alone
#: (forward and backward under TensorFlow's XLA, votes 192 x 16 x 144 x 16 as ConsensusCapsNet's 64 px convolutional
#: layers route them, Q = 10, 2-core AMD EPYC, 2026-12-04): 0.16 s four at a time, 0.20-0.23 s one, two, three
#: or five, 0.36 s all ten. In the application's training step at 64 px, batch 16 (benchmarks/first_step.py, same
#: day, two processes each) the first step went from 24.1 and 25.8 s to 15.5 and 21.2 s, the step 5.45 to 5.37 s.
_COMPONENTS_AT_ONCE = 4

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
    """Similarity-learning (kernel) routing of the inner-consensus paper: a learned kernel scores agreement.

    Each parent ``j`` looks for a pose ``mu_j`` and a distribution ``c_.j`` over its children that
    maximise ``sum_i c_ij K(mu_j, v_j|i) - l1_j KL(c_.j | uniform) - l2_j KL(c_.j | a)``, alternating the
    two closed-form steps (the equations are reconstructed in the routers reference). With votes ``v``
    ``(batch, in_caps, out_caps, d)`` and child activations ``a`` ``(batch, in_caps)`` (ones when absent):

        c_ij = 1 / in_caps;  mu_j = sum_i c_ij v_j|i                     (batch, out_caps, d)
        repeat iterations times:
            k_ij = K(mu_j, v_j|i)                                         (batch, in_caps, out_caps)
            c_ij = softmax over the children i of (l2_j log(a_i + 0.1) + k_ij) / (|l1_j| + |l2_j| + 1e-6)
            mu_j = sum_i c_ij v_j|i / sum_i c_ij
        a_j = sigmoid(t1_j sum_i c_ij k_ij + |t3_j| sum_i c_ij log(a_i + epsilon) + t2_j)

    The activation uses the ``k_ij`` of the last compatibility step (made with the previous ``mu``), as the
    latest code (version 5762855100) does. ``K`` is a learned mixture ``sum_q softmax(w)_q k_q`` of
    ``num_components`` terms: ``"spectral_mixture"`` (the code's) ``k_q = sum_p exp(-2 pi^2 tau_p^2
    |nu_qp|) cos(2 pi tau_p m_qp)``, ``tau = mu - v``; ``"gaussian_mixture"`` (the paper's words)
    ``k_q = exp(-|tau|^2 / (2 ell_q^2))`` with length scales ``ell_q = |.| + 1e-3``, initialised an octave
    apart around 1. Weights: the kernel's, and ``l1, l2, t1, t2, t3`` per output type.

    Args:
        iterations: compatibility/pose alternations. Defaults to 3 (the paper).
        kernel: ``"spectral_mixture"`` or ``"gaussian_mixture"``. Defaults to ``"spectral_mixture"``.
        num_components: mixture size ``Q``. Defaults to 4 (the paper's network: 4, 4 and 10 for its
            three capsule layers).
        activation: ``"sigmoid"``, or ``"linear"`` for the logit (the code's ``activate=False``, for a
            class layer trained with softmax cross-entropy). Defaults to ``"sigmoid"``.
        activation_prior: include the ``|t3| sum_i c_ij log a_i`` term (the latest code); ``False`` gives
            the paper's eq. 13. Defaults to ``True``.
        prior_offset: added to the child activations inside the prior. Defaults to 0.1.
        epsilon: added to the child activations inside the activation's log. Defaults to 1e-6.
        lambda1_initializer, lambda2_initializer, theta_initializer, bias_initializer,
        kernel_initializer, mixture_initializer, length_scale_initializer: initializers of ``l1``, ``l2``,
            ``t1`` and ``t3``, ``t2``, ``m`` and ``nu``, ``w``, ``ell``; ``None`` gives the code's.
        **kwargs: ``quantize_levels``, ``jit_compile`` (see :class:`Router`) and the
            ``keras.layers.Layer`` arguments.

    Example:
        >>> router = KernelRouter(num_components=10, activation="linear")
        >>> votes, activations = keras.random.normal((4, 72, 5, 16)), keras.random.uniform((4, 72))
        >>> poses, logits = router(votes, activations)  # (4, 5, 16), (4, 5)

    See the routers reference (docs/reference/routers.md#kernel-routing) and docs/routers/kernel.md for
    the numerical safeguards and the differences from the authors' code.
    """

    accepts_parent_major = True
    coupling_sums_over = "children"
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

    def similarity(self, poses, votes, cos=ops.cos, components_at_once=1):
        """The kernel ``K(mu_j, v_j|i)``, in the parent-major layout the router iterates in.

        The spectral mixture is accumulated ``components_at_once`` components at a time. One at a time, the
        largest temporaries are vote-sized ``(batch, out_caps, in_caps, dim)`` rather than ``Q`` times that,
        and every op is a LiteRT built-in (no 5-D tensors). Compiled training takes four at a time: each
        chunk one ``(batch, out_caps, in_caps, 4, dim)`` expression, a smaller graph that XLA compiles
        sooner. Work per (child, parent): ``Q * dim`` exp and cos for the spectral mixture, ``dim``
        squares and ``Q`` exp for the Gaussian one.

        Args:
            poses: ``(batch, out_caps, dim)``.
            votes: ``(batch, out_caps, in_caps, dim)``.
            cos: the cosine (:func:`~keras_capsules.ops.trig.polynomial_cos` where XLA compiles it).
            components_at_once: mixture components per expression.

        Returns:
            ``(batch, out_caps, in_caps)``.
        """
        tau = clip_magnitude(ops.expand_dims(poses, 2) - votes, _MAX_DISTANCE)
        weights = ops.softmax(ops.cast(self.mixture_logits, "float32"))
        if self.kernel == "spectral_mixture":
            bandwidths = ops.abs(ops.cast(self.bandwidths, "float32"))
            frequencies = ops.cast(self.frequencies, "float32")
            decay, phase = -2.0 * math.pi**2 * ops.square(tau), 2.0 * math.pi * tau
            if components_at_once > 1:
                return self._spectral_mixture_chunks(
                    decay, phase, bandwidths, frequencies, weights, cos, components_at_once
                )
            rows = tuple(ops.shape(votes)[:2]) + (1,)  # the weights' gradients: see broadcast_rows
            total = 0.0
            for q in range(self.num_components):
                term = ops.exp(decay * broadcast_rows(bandwidths[q], rows))
                term = term * cos(phase * broadcast_rows(frequencies[q], rows))
                total = total + weights[q] * ops.sum(term, axis=-1)
            return total
        scales = ops.abs(ops.cast(self.length_scales, "float32")) + 1e-3
        distances = ops.sum(ops.square(tau), axis=-1, keepdims=True)  # (b, o, i, 1)
        return ops.sum(ops.exp(-distances / (2.0 * ops.square(scales))) * weights, axis=-1)

    def _spectral_mixture_chunks(self, decay, phase, bandwidths, frequencies, weights, cos, size):
        """``sum_q w_q sum_p exp(decay_p |nu_qp|) cos(phase_p m_qp)``, ``size`` components per expression:
        decay, phase ``(b, o, i, d)``; bandwidths, frequencies ``(Q, d)``; weights ``(Q,)``. Returns ``(b, o, i)``."""
        dim, rows = ops.shape(decay)[-1], tuple(ops.shape(decay)[:2]) + (1,)
        decay, phase = ops.expand_dims(decay, 3), ops.expand_dims(phase, 3)  # (b, o, i, 1, d)

        def rows_of(parameter):  # (count, d) -> (b, o, 1, count, d), its gradient summed by broadcast_rows
            count = parameter.shape[0]
            return ops.reshape(broadcast_rows(ops.reshape(parameter, (count * dim,)), rows), rows + (count, dim))

        total = 0.0
        for start in range(0, self.num_components, size):
            chunk = slice(start, start + size)
            terms = ops.exp(decay * rows_of(bandwidths[chunk])) * cos(phase * rows_of(frequencies[chunk]))
            total = total + ops.sum(ops.sum(terms, axis=-1) * weights[chunk], axis=-1)
        return total

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
        # Compiled training takes the mixture's components four at a time (a graph that compiles sooner);
        # inference one at a time, since XLA on JAX writes the chunks' 5-D temporaries (twice the memory).
        together = _COMPONENTS_AT_ONCE if self.compiles(training) or (compiled and training) else 1
        cos = polynomial_cos if compiled else ops.cos
        similarity = functools.partial(self.similarity, cos=cos, components_at_once=together)
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
