"""The ``Router`` contract shared by every routing algorithm."""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.ops.quantize import quantize_uniform

LOW_PRECISION = ("float16", "bfloat16")


class Router(keras.layers.Layer):
    """Base class of all routers: votes in, parent capsules out.

    Call signature::

        router(votes, activations=None, training=None, return_coupling=False)

    Args (call):
        votes: ``(batch, in_caps, out_caps, out_dim)``, the vote of every child for every parent.
            Convolutional capsule layers fold output positions into ``batch``.
        activations: optional ``(batch, in_caps)`` child activations in [0, 1]; routers that do not
            use them ignore them, routers that need them (EM, kernel, LSTM) use ones when absent.
        training: Keras training flag.
        return_coupling: also return the coupling coefficients.

    Returns:
        ``(poses, activations)`` with poses ``(batch, out_caps, out_dim)`` and activations
        ``(batch, out_caps)``, plus coupling ``(batch, in_caps, out_caps)`` when ``return_coupling``.

    Numerical safeguard shared by all routers: the routing maths run in float32 (weights included:
    routers do not autocast their variables under a mixed-precision policy) whatever the layer's
    compute dtype (float16 and bfloat16 overflow in the squared norms and softmaxes of routing), and
    the outputs are cast back to the input dtype; every output is bounded, so the cast cannot overflow.

    Args (constructor):
        iterations: number of routing iterations (routers with a single pass validate it is 1).
        quantize_levels: ``None`` or ``K >= 2``. At inference (``training`` false), the coupling
            coefficients of the last iteration are snapped by REM's uniform quantiser ``q_K``
            (ALGORITHMS.md §8.2) before they weight the votes.

    Subclasses implement ``route(votes, activations, training)`` on float32 tensors and return
    ``(poses, activations, coupling)``; they call ``self.finalize_coupling(c, training)`` on the
    coupling of the last iteration before it weights the votes.
    """

    router_name = None
    #: Whether this router supports more than one iteration.
    iterative = True

    def __init__(self, iterations=3, quantize_levels=None, **kwargs):
        # Routing weights are read in float32 (no mixed-precision autocast to float16).
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        errors.check_positive_int(self, "iterations", iterations)
        if not self.iterative and iterations != 1:
            errors.fail(self, "iterations", "1 (this router makes a single pass)", iterations)
        if quantize_levels is not None:
            errors.check_positive_int(self, "quantize_levels", quantize_levels, minimum=2)
        self.iterations = iterations
        self.quantize_levels = quantize_levels

    def build(self, votes_shape, activations_shape=None):
        self.check_votes_shape(votes_shape)
        self.build_router(tuple(votes_shape))
        self.built = True

    def build_router(self, votes_shape):
        """Creates the router's weights, if any, from ``(batch, in_caps, out_caps, out_dim)``."""

    def check_votes_shape(self, votes_shape):
        errors.check_rank(self, "votes", votes_shape, 4, "(batch, in_caps, out_caps, out_dim)")

    def call(self, votes, activations=None, training=None, return_coupling=False):
        dtype = votes.dtype
        votes32 = ops.cast(votes, "float32")
        acts32 = None if activations is None else ops.cast(activations, "float32")
        poses, out_acts, coupling = self.route(votes32, acts32, training)
        poses = ops.cast(poses, dtype)
        out_acts = ops.cast(out_acts, dtype)
        if return_coupling:
            return poses, out_acts, ops.cast(coupling, dtype)
        return poses, out_acts

    def route(self, votes, activations, training):
        raise NotImplementedError(f"{type(self).__name__} must implement route().")

    def finalize_coupling(self, coupling, training):
        """Applies REM quantisation to the last iteration's coupling at inference, if configured."""
        if self.quantize_levels is None or training:
            return coupling
        return quantize_uniform(coupling, self.quantize_levels)

    def get_config(self):
        config = super().get_config()
        config.update({"iterations": self.iterations, "quantize_levels": self.quantize_levels})
        return config


def parent_major(votes):
    """``(batch, in_caps, out_caps, dim)`` -> ``(batch, out_caps, in_caps, dim)``.

    Routers iterate in this layout: the per-iteration weighted sums ``sum_i c_ij u_j|i`` and agreements
    ``u_j|i . v_j`` then become batched matrix products with no transposes (several times faster on
    CPU than contracting over the middle axis of the contract layout). One transpose per call.
    """
    return ops.transpose(votes, (0, 2, 1, 3))


def child_major(coupling):
    """``(batch, out_caps, in_caps)`` -> the contract layout ``(batch, in_caps, out_caps)``."""
    return ops.transpose(coupling, (0, 2, 1))


def ones_activations(votes):
    """Child activations of ones, ``(batch, in_caps)``, for routers used without activations."""
    return ops.ones_like(votes[:, :, 0, 0])
