"""Fully connected capsule layer."""

import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import check_activations_shape, unpack_capsules, unpack_shapes
from keras_capsules.layers.routed_capsules import RoutedCapsules
from keras_capsules.routing import Router
from keras_capsules.serialization import register


def coordinate_offsets(height, width, pose_dim):
    """IBM's coordinate-addition offsets ``(H, W, pose_dim)`` for a ``p x p`` matrix pose.

    The scaled column centre ``(w + 0.5) / W`` goes to pose element ``p - 1`` (row 0, column
    ``p - 1``) and the scaled row centre ``(h + 0.5) / H`` to element ``2p - 1`` (row 1, column
    ``p - 1``): "the first two elements of the right-hand column". For 4x4 poses these are
    elements 3 and 7, exactly IBM's ``coord_addition`` (whose row/column order is swapped relative
    to the paper's wording; docs/reference/routers.md#coordinate-addition).
    """
    side = int(round(pose_dim**0.5))
    offsets = np.zeros((height, width, pose_dim), dtype="float32")
    offsets[:, :, side - 1] = ((np.arange(width) + 0.5) / width)[None, :]
    offsets[:, :, 2 * side - 1] = ((np.arange(height) + 0.5) / height)[:, None]
    return offsets


@register
class FcCaps(RoutedCapsules):
    """Fully connected capsules: every child votes for every parent, then a router combines the votes.

    Inputs: poses ``(batch, in_caps, in_dim)`` or a grid ``(batch, H, W, types, in_dim)`` (flattened to
    ``H*W*types`` children in (row, column, type) order), optionally paired with activations of the
    same shape without ``in_dim``.

    Outputs: ``(poses, activations)``: ``(batch, num_capsules, capsule_dim)`` and
    ``(batch, num_capsules)``; with ``return_coupling=True`` also the coupling coefficients
    ``(batch, in_caps, num_capsules)``.

    Weight sharing (``shared_weights``):

    - ``False``: one ``W_ij`` per child and parent.
    - ``True``: one ``W_j`` per parent, shared by every child.
    - ``"positions"`` (grid input only): one ``W_tj`` per child **type** and parent, shared across
      the ``H x W`` positions: the class-capsule layer of matrix capsules with EM routing
      (``(types, num_capsules, p, p)``, docs/reference/routers.md#coordinate-addition).

    Coordinate addition (``coordinate_addition=True``; grid input, matrix transform, and
    ``shared_weights`` ``True`` or ``"positions"``, since with per-position weights the position is
    not lost): after the transform, the scaled centre of each child's position is added to its
    votes, ``(w + 0.5) / W`` to pose element ``p - 1`` and ``(h + 0.5) / H`` to element ``2p - 1``
    (elements 3 and 7 of a 4x4 pose, IBM's ``coord_addition``; see :func:`coordinate_offsets`).

    See :class:`~keras_capsules.layers.routed_capsules.RoutedCapsules` for the other arguments.

    Example:
        >>> caps = FcCaps(10, 16, router="dynamic", routing_iterations=3)
        >>> poses, lengths = caps(keras.random.normal((2, 1152, 8)))   # (2, 10, 16), (2, 10)
        >>> em_class = FcCaps(5, router="em", transform="matrix", shared_weights="positions",
        ...                   coordinate_addition=True)
        >>> poses, acts = em_class((keras.random.normal((2, 5, 5, 32, 16)), keras.ops.ones((2, 5, 5, 32))))
    """

    def __init__(
        self,
        num_capsules: int,
        capsule_dim: int | None = None,
        router: str | dict | Router = "dynamic",
        routing_iterations: int | None = None,
        transform: str = "vector",
        shared_weights: bool | str = False,
        coordinate_addition: bool = False,
        **kwargs,
    ) -> None:
        by_position = isinstance(shared_weights, str) and shared_weights == "positions"
        if not (by_position or isinstance(shared_weights, bool)):
            errors.fail(
                f"FcCaps '{kwargs.get('name')}'", "shared_weights", "False, True or 'positions'", shared_weights
            )
        super().__init__(
            num_capsules,
            capsule_dim,
            router=router,
            routing_iterations=routing_iterations,
            transform=transform,
            shared_weights=False if by_position else shared_weights,
            **kwargs,
        )
        if by_position:
            self.shared_weights = "positions"
        self.coordinate_addition = bool(coordinate_addition)
        self._offsets = None
        if self.coordinate_addition:
            if self.shared_weights is False:
                expected = "shared_weights=True or 'positions' (weights shared across positions)"
                errors.fail(self, "coordinate_addition", expected, coordinate_addition)
            if self.transform != "matrix":
                expected = "transform='matrix' (coordinates go into the right-hand column of p x p votes)"
                errors.fail(self, "coordinate_addition", expected, coordinate_addition)

    def build(self, input_shape):
        poses_shape, acts_shape = unpack_shapes(self, input_shape)
        if self.shared_weights == "positions" or self.coordinate_addition:
            options = f"shared_weights={self.shared_weights!r}, coordinate_addition={self.coordinate_addition}"
            errors.check_rank(
                self, "inputs", poses_shape, 5, f"(batch, H, W, types, in_dim): a capsule grid, for {options}"
            )
        errors.check_rank(
            self, "inputs", poses_shape, (3, 5), "(batch, in_caps, in_dim) or (batch, H, W, types, in_dim)"
        )
        check_activations_shape(self, poses_shape, acts_shape)
        if any(d is None for d in poses_shape[1:]):
            errors.fail(self, "inputs", "fully defined non-batch dimensions", f"shape {poses_shape}")
        self.record_input_shape(poses_shape)
        in_caps = 1
        for d in poses_shape[1:-1]:
            in_caps *= d
        in_dim = poses_shape[-1]
        if self.shared_weights != "positions":
            self.build_routing((poses_shape[0], in_caps, in_dim))
        else:
            # The transform sees one position's ``types`` children; the router all H*W*types.
            if self.transform == "matrix" and self.capsule_dim is not None and self.capsule_dim != in_dim:
                errors.fail(
                    self,
                    "capsule_dim",
                    f"the input pose size {in_dim} (matrix votes keep the pose size)",
                    self.capsule_dim,
                )
            children_shape = (None, poses_shape[3], in_dim)
            if not self.vote_transform.built:
                self.vote_transform.build(children_shape)
            self.out_dim = self.vote_transform.compute_output_shape(children_shape)[-1]
            if not self.router.built:
                self.router.build((None, in_caps, self.num_capsules, self.out_dim))
        self._offsets = None
        if self.coordinate_addition:
            self._offsets = coordinate_offsets(poses_shape[1], poses_shape[2], self.out_dim)

    def compute_votes(self, inputs):
        """Votes and child activations: ``(batch, in_caps, num_capsules, out_dim)``, ``(batch, in_caps)`` or ``None``.

        Used by :meth:`route_inputs` (with coordinate addition or position-shared transforms).
        """
        poses, activations = unpack_capsules(self, inputs)
        self.check_input_shape(poses)
        batch = ops.shape(poses)[0]
        grid = len(poses.shape) == 5
        in_caps = int(np.prod(poses.shape[1:-1]))  # static, so the votes keep a known in_caps
        if activations is not None and grid:
            activations = ops.reshape(activations, (batch, in_caps))
        if self.shared_weights == "positions":
            height, width, types, in_dim = poses.shape[1:]
            votes = self.vote_transform(ops.reshape(poses, (-1, types, in_dim)))
            votes = ops.reshape(votes, (batch, height, width, types, self.num_capsules, self.out_dim))
        else:
            children = ops.reshape(poses, (batch, in_caps, poses.shape[-1])) if grid else poses
            votes = self.vote_transform(children)
            if self._offsets is not None:
                height, width, types = poses.shape[1:4]
                votes = ops.reshape(votes, (batch, height, width, types, self.num_capsules, self.out_dim))
        if self._offsets is not None:
            offsets = ops.convert_to_tensor(self._offsets[:, :, None, None, :], dtype=votes.dtype)
            votes = votes + offsets
        if len(votes.shape) == 6:
            votes = ops.reshape(votes, (batch, in_caps, self.num_capsules, self.out_dim))
        return votes, activations

    def route_inputs(self, inputs, training=None, return_coupling=False, **router_kwargs):
        """Votes of the input capsules routed to the parents: the router's outputs.

        Without coordinate addition or position-shared transforms the votes come straight from the
        children, in the router's own layout where both sides allow it
        (:meth:`~keras_capsules.layers.routed_capsules.RoutedCapsules.vote_and_route`).

        Args:
            inputs: as :meth:`call`.
            router_kwargs: extra router call arguments (``ConcurrentRouting``'s ``initial_poses``,
                ``steps``, ``finalize``).
        """
        if self.shared_weights != "positions" and self._offsets is None:
            poses, activations = unpack_capsules(self, inputs)
            self.check_input_shape(poses)
            batch = ops.shape(poses)[0]
            in_caps = int(np.prod(poses.shape[1:-1]))
            children = ops.reshape(poses, (batch, in_caps, poses.shape[-1]))
            if activations is not None:
                activations = ops.reshape(activations, (batch, in_caps))
            return self.vote_and_route(children, activations, training, return_coupling, **router_kwargs)
        votes, activations = self.compute_votes(inputs)
        return tuple(
            self.router(votes, activations, training=training, return_coupling=return_coupling, **router_kwargs)
        )

    def call(self, inputs, training=None, return_coupling=False):
        return self.route_inputs(inputs, training, return_coupling)

    def get_config(self):
        config = super().get_config()
        config["coordinate_addition"] = self.coordinate_addition
        return config
