"""Shared machinery of the routed capsule layers (:class:`FcCaps`, :class:`ConvCaps`)."""

import keras

from keras_capsules import errors, routing
from keras_capsules.layers.votes import make_votes


class RoutedCapsules(keras.layers.Layer):
    """Base of capsule layers that compute votes and route them (not used directly).

    Args:
        num_capsules: parent capsules (types, for convolutional layers).
        capsule_dim: parent pose size; for ``transform="matrix"`` it may be omitted and must otherwise
            equal the input pose size.
        router: a registered router name, a config dict ``{"name": ..., ...}`` or a ``Router`` (cloned
            from its config: see :func:`keras_capsules.routing.resolve`).
        routing_iterations: replaces the router's ``iterations`` (``None`` keeps the router's own).
        transform: ``"vector"`` (``W_ij`` of shape ``(in_dim, capsule_dim)``) or ``"matrix"``
            (``p x p`` matrices on flat matrix poses).
        shared_weights: share the transform across children (one ``W_j`` per parent).
        matrix_side: ``"right"`` (``P W``) or ``"left"`` (``W P``) for matrix votes.
        normalize_weights: Frobenius-normalise matrix transforms (the inner-consensus paper's eq. 1).
        kernel_initializer, kernel_regularizer: for the transform. With many children (e.g. 1,152),
            Sabour's squash and dynamic routing, the default glorot_uniform starts the parents near
            zero length, where squash's gradient vanishes and training stalls: pass
            ``keras.initializers.RandomNormal(stddev=0.1)``, as :func:`~keras_capsules.applications.CapsNet` does.
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
            capsule_dim = errors.check_positive_int(self, "capsule_dim", capsule_dim)
        self.capsule_dim = capsule_dim
        if routing_iterations is not None:
            routing_iterations = errors.check_positive_int(self, "routing_iterations", routing_iterations)
        self.routing_iterations = routing_iterations
        self.transform = transform
        self.shared_weights = bool(shared_weights)
        self.matrix_side = matrix_side
        self.normalize_weights = bool(normalize_weights)
        self.router = routing.resolve(router, routing_iterations, owner=self)
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
        if transform not in self.router.pose_kinds:
            fitting = routing.available(pose=transform)
            errors.fail(
                self,
                "router",
                f"a router that routes {transform} poses (routing.available(pose={transform!r}): {fitting})",
                f"{type(self.router).__name__}, which routes {'/'.join(self.router.pose_kinds)} poses only",
            )

    def record_input_shape(self, poses_shape):
        """Called by ``build``: the non-batch poses shape every later call must have."""
        self._poses_shape = tuple(poses_shape[1:])

    def check_input_shape(self, poses):
        """A named error when ``poses`` differ from the shape the layer was built for."""
        expected = getattr(self, "_poses_shape", None)
        if expected is not None and tuple(poses.shape[1:]) != expected:
            errors.fail(
                self,
                "inputs",
                f"poses of shape (batch, {', '.join(map(str, expected))}) (the shape the layer was built for)",
                f"shape {tuple(poses.shape)}",
            )

    def build_routing(self, children_shape):
        """Builds votes and router for children ``(batch, in_caps, in_dim)``."""
        in_dim = children_shape[-1]
        if self.transform == "matrix" and self.capsule_dim is not None and self.capsule_dim != in_dim:
            errors.fail(
                self, "capsule_dim", f"the input pose size {in_dim} (matrix votes keep the pose size)", self.capsule_dim
            )
        if not self.vote_transform.built:
            self.vote_transform.build(children_shape)
        votes_shape = self.vote_transform.compute_output_shape(children_shape)
        if not self.router.built:
            self.router.build(votes_shape)
        self.out_dim = votes_shape[-1]

    def vote_and_route(self, children, activations, training, return_coupling, **router_kwargs):
        """Votes of ``children`` ``(batch, in_caps, in_dim)`` routed to the parents: the router's outputs.

        When the router iterates in the parent-major layout (``accepts_parent_major``), the vote
        transform writes the votes in that layout: one transpose of the vote tensor instead of two,
        forward and backward. A call that makes a single uniform pass of a router that can route
        from the votes' sums (``accepts_vote_sums``: inverted dot-product attention with one
        iteration, or the first sweep of ``ConcurrentRouting``) gets those sums as one matrix
        product instead of the votes.
        """
        steps = router_kwargs.get("steps") or self.router.iterations
        if self.router.accepts_vote_sums and steps == 1 and router_kwargs.get("initial_poses") is None:
            return self.router.route_vote_sums(
                self.vote_transform.child_sums(children),  # float32 sums
                children.shape[1],
                training,
                return_coupling,
                router_kwargs.get("finalize", True),
                dtype=self.router.output_dtype(children),
            )
        if self.router.accepts_parent_major:
            votes = self.vote_transform(children, parent_major=True)
            router_kwargs["votes_layout"] = "parent_major"
        else:
            votes = self.vote_transform(children)
        return tuple(
            self.router(votes, activations, training=training, return_coupling=return_coupling, **router_kwargs)
        )

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
        return cls(**config)  # the router's serialisation dict is resolved (and built) by routing.resolve
