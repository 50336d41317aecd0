"""Shared machinery of the routed capsule layers (:class:`FcCaps`, :class:`ConvCaps`)."""

import keras

from keras_capsules import errors, routing
from keras_capsules.layers.votes import make_votes


def resolve_router(owner, router, routing_iterations):
    """Turns a router name, config dict or instance into a ``Router``, applying ``routing_iterations``."""
    if isinstance(router, routing.Router):
        if routing_iterations is not None and routing_iterations != router.iterations:
            errors.fail(owner, "routing_iterations", f"None or the router instance's iterations ({router.iterations})", routing_iterations)
        return router
    kwargs = {} if routing_iterations is None else {"iterations": routing_iterations}
    try:
        return routing.get(router, **kwargs)
    except (ValueError, TypeError) as error:
        raise type(error)(f"{type(owner).__name__} '{owner.name}': {error}") from None


class RoutedCapsules(keras.layers.Layer):
    """Base of capsule layers that compute votes and route them (not used directly).

    Args:
        num_capsules: parent capsules (types, for convolutional layers).
        capsule_dim: parent pose size; for ``transform="matrix"`` it may be omitted and must otherwise
            equal the input pose size.
        router: a registered router name, a config dict ``{"name": ..., ...}`` or a ``Router``.
        routing_iterations: overrides the router's ``iterations`` (``None`` keeps its default).
        transform: ``"vector"`` (``W_ij`` of shape ``(in_dim, capsule_dim)``) or ``"matrix"``
            (``p x p`` matrices on flat matrix poses).
        shared_weights: share the transform across children (one ``W_j`` per parent).
        matrix_side: ``"right"`` (``P W``) or ``"left"`` (``W P``) for matrix votes.
        normalize_weights: Frobenius-normalise matrix transforms (seed 001, eq. 1).
        kernel_initializer, kernel_regularizer: for the transform.
    """

    def __init__(
        self,
        num_capsules,
        capsule_dim=None,
        router="dynamic",
        routing_iterations=None,
        transform="vector",
        shared_weights=False,
        matrix_side="right",
        normalize_weights=False,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_capsules = errors.check_positive_int(self, "num_capsules", num_capsules)
        if capsule_dim is not None:
            errors.check_positive_int(self, "capsule_dim", capsule_dim)
        self.capsule_dim = capsule_dim
        self.routing_iterations = routing_iterations
        self.transform = transform
        self.shared_weights = bool(shared_weights)
        self.matrix_side = matrix_side
        self.normalize_weights = bool(normalize_weights)
        self.router = resolve_router(self, router, routing_iterations)
        self.vote_transform = make_votes(
            self,
            transform,
            num_capsules,
            capsule_dim,
            shared_weights,
            matrix_side,
            normalize_weights,
            kernel_initializer,
            kernel_regularizer,
            name="votes",
        )

    def build_routing(self, children_shape):
        """Builds votes and router for children ``(batch, in_caps, in_dim)``."""
        in_dim = children_shape[-1]
        if self.transform == "matrix" and self.capsule_dim is not None and self.capsule_dim != in_dim:
            errors.fail(self, "capsule_dim", f"the input pose size {in_dim} (matrix votes keep the pose size)", self.capsule_dim)
        if not self.vote_transform.built:
            self.vote_transform.build(children_shape)
        votes_shape = self.vote_transform.compute_output_shape(children_shape)
        if not self.router.built:
            self.router.build(votes_shape)
        self.out_dim = votes_shape[-1]

    def route_children(self, children, activations, training, return_coupling):
        """Votes then routing: ``(batch, in_caps, in_dim)`` -> router outputs."""
        votes = self.vote_transform(children)
        return self.router(votes, activations, training=training, return_coupling=return_coupling)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_capsules": self.num_capsules,
                "capsule_dim": self.capsule_dim,
                "router": keras.saving.serialize_keras_object(self.router),
                "routing_iterations": self.routing_iterations,
                "transform": self.transform,
                "shared_weights": self.shared_weights,
                "matrix_side": self.matrix_side,
                "normalize_weights": self.normalize_weights,
                "kernel_initializer": keras.initializers.serialize(self.vote_transform.kernel_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.vote_transform.kernel_regularizer),
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["router"] = keras.saving.deserialize_keras_object(config["router"])
        return cls(**config)
