"""Fully connected capsule layer."""

from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import check_activations_shape, unpack_capsules, unpack_shapes
from keras_capsules.layers.routed_capsules import RoutedCapsules
from keras_capsules.serialization import register


@register
class FcCaps(RoutedCapsules):
    """Fully connected capsules: every child votes for every parent, then a router combines the votes.

    Inputs: poses ``(batch, in_caps, in_dim)`` or a grid ``(batch, H, W, types, in_dim)`` (flattened to
    ``H*W*types`` children in (row, column, type) order), optionally paired with activations of the
    same shape without ``in_dim``.

    Outputs: ``(poses, activations)``: ``(batch, num_capsules, capsule_dim)`` and
    ``(batch, num_capsules)``; with ``return_coupling=True`` also the coupling coefficients
    ``(batch, in_caps, num_capsules)``.

    See :class:`~keras_capsules.layers.routed_capsules.RoutedCapsules` for the arguments.

    Example:
        >>> caps = FcCaps(10, 16, router="dynamic", routing_iterations=3)
        >>> poses, lengths = caps(keras.random.normal((2, 1152, 8)))   # (2, 10, 16), (2, 10)
    """

    def build(self, input_shape):
        poses_shape, acts_shape = unpack_shapes(self, input_shape)
        errors.check_rank(self, "inputs", poses_shape, (3, 5), "(batch, in_caps, in_dim) or (batch, H, W, types, in_dim)")
        check_activations_shape(self, poses_shape, acts_shape)
        if any(d is None for d in poses_shape[1:]):
            errors.fail(self, "inputs", "fully defined non-batch dimensions", f"shape {poses_shape}")
        in_caps = 1
        for d in poses_shape[1:-1]:
            in_caps *= d
        self.build_routing((poses_shape[0], in_caps, poses_shape[-1]))

    def call(self, inputs, training=None, return_coupling=False):
        poses, activations = unpack_capsules(self, inputs)
        if len(poses.shape) == 5:
            batch = ops.shape(poses)[0]
            poses = ops.reshape(poses, (batch, -1, poses.shape[-1]))
            if activations is not None:
                activations = ops.reshape(activations, (batch, -1))
        return self.route_children(poses, activations, training, return_coupling)
