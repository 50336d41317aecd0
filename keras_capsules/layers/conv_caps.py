"""Convolutional capsule layer."""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import check_activations_shape, unpack_capsules, unpack_shapes
from keras_capsules.layers.routed_capsules import RoutedCapsules
from keras_capsules.ops.patches import output_size, patch_indices
from keras_capsules.routing.base import join_position_chunks, sequence_token, split_position_chunks
from keras_capsules.serialization import register

#: A router that couples the output positions (EM's ``child_grid``) routes chunks of output rows whose
#: votes take at most this many bytes per example (float32; at least one row): the layer's transient
#: memory, not its whole vote tensor's.
CHUNK_VOTE_BYTES = 16 * 2**20


@register
class ConvCaps(RoutedCapsules):
    """Convolutional capsules: each output position routes the children of its ``K x K`` receptive field.

    The receptive fields are gathered once with one index gather (no per-parent copies of the input);
    output positions are folded into the batch axis, so every router works unchanged and parents at
    different positions do not compete (the apple/IDPA convention; EM's cross-position normalisation
    is an option of the EM router). The transform weights depend on the kernel offset, the input type
    and the output type and are shared across positions.

    Inputs: poses ``(batch, H, W, in_types, in_dim)``, optionally paired with activations
    ``(batch, H, W, in_types)``. Zero padding (``padding="same"``) adds children with zero poses and
    zero activations.

    Outputs: ``(poses, activations)``: ``(batch, H_out, W_out, num_capsules, capsule_dim)`` and
    ``(batch, H_out, W_out, num_capsules)``; with ``return_coupling=True`` also the coupling
    ``(batch * H_out * W_out, K*K*in_types, num_capsules)``, children ordered (kernel row, kernel
    column, type).

    Args:
        kernel_size: receptive field ``K``.
        strides: stride ``s``.
        padding: ``"valid"`` (the papers) or ``"same"``.
        remat: in training, keep only the layer's inputs for the backward pass and recompute the
            gather, the votes and the routing there (``keras.remat``). The votes,
            ``(batch * H_out * W_out, K*K*in_types, num_capsules, out_dim)``, are by far the layer's
            largest tensor (925 MB for InvertedAttentionCapsNet's first layer at batch 32); without
            ``remat`` every call (every concurrent-routing sweep) keeps its own copies until the
            backward pass. With ``remat`` the output rows are also routed one row at a time (positions
            route independently), so the votes alive at any moment are one row's. Costs one more
            forward computation of the layer per training step. Not applied to routers with random or
            moving state (dropout, batch-norm statistics), which a recomputation would change.
            A router that couples the positions (EM with ``child_grid``) is routed by chunks of rows
            whose votes stay within :data:`CHUNK_VOTE_BYTES` per example, in training and at inference
            (``EMRouter.route_position_chunks``): the whole vote tensor is never formed, every iteration
            makes each chunk's votes anew (and training recomputes them in the backward pass), about
            1.7x the matrix products of routing the whole tensor; ``remat=False`` routes the whole
            tensor and keeps everything for the backward pass (same results to float32 rounding).
        Other arguments: see :class:`~keras_capsules.layers.routed_capsules.RoutedCapsules`.
    """

    def __init__(
        self,
        num_capsules: int,
        capsule_dim: int | None = None,
        kernel_size: int = 3,
        strides: int = 1,
        padding: str = "valid",
        remat: bool = True,
        **kwargs,
    ) -> None:
        super().__init__(num_capsules, capsule_dim, **kwargs)
        self.kernel_size = errors.check_positive_int(self, "kernel_size", kernel_size)
        self.strides = errors.check_positive_int(self, "strides", strides)
        self.padding = errors.check_one_of(self, "padding", padding, ("valid", "same"))
        if not isinstance(remat, bool):
            errors.fail(self, "remat", "True or False", remat, TypeError)
        self.remat = remat

    def build(self, input_shape):
        poses_shape, acts_shape = unpack_shapes(self, input_shape)
        errors.check_rank(self, "inputs", poses_shape, 5, "(batch, H, W, types, capsule_dim)")
        check_activations_shape(self, poses_shape, acts_shape)
        _, height, width, types, in_dim = poses_shape
        if None in (height, width, types, in_dim):
            errors.fail(self, "inputs", "fully defined H, W, types and capsule_dim", f"shape {poses_shape}")
        errors.check_kernel_fits(self, self.kernel_size, self.padding, poses_shape)
        self.record_input_shape(poses_shape)
        indices, self._pads, _ = patch_indices(height, width, self.kernel_size, self.strides, self.padding)
        self._indices = indices
        self.output_grid = (
            output_size(height, self.kernel_size, self.strides, self.padding),
            output_size(width, self.kernel_size, self.strides, self.padding),
        )
        self.build_routing((None, self.kernel_size * self.kernel_size * types, in_dim))

    def _gather(self, grid, rows=None):
        """``(batch, H, W, types, ...)`` -> ``(batch * H_out * W_out, K*K*types, ...)``.

        ``rows=(start, stop)`` gathers the receptive fields of those output rows only.
        """
        top, bottom, left, right = self._pads
        if any(self._pads):
            widths = [(0, 0), (top, bottom), (left, right)] + [(0, 0)] * (len(grid.shape) - 3)
            grid = ops.pad(grid, widths)
        batch = ops.shape(grid)[0]
        trailing = tuple(grid.shape[3:])
        flat = ops.reshape(grid, (batch, grid.shape[1] * grid.shape[2]) + trailing)
        out_h, out_w = self.output_grid
        start, stop = rows or (0, out_h)
        field = self.kernel_size * self.kernel_size
        patches = ops.take(flat, self._indices[start * out_w * field : stop * out_w * field], axis=1)
        return ops.reshape(patches, (batch * (stop - start) * out_w, field * trailing[0]) + trailing[1:])

    def rematerializes(self, training):
        """Whether this call recomputes its votes in the backward pass (see ``remat``)."""
        random = getattr(self.router, "seed_generator", None) is not None
        return bool(training) and self.remat and not random and not self.router.non_trainable_weights

    def routes_across_positions(self):
        """Whether the layer routes chunk by chunk through its router's ``route_position_chunks``: with
        ``remat``, for a router that couples the output positions (EM with ``child_grid``)."""
        couples = getattr(self.router, "child_grid", None) is not None and hasattr(self.router, "route_position_chunks")
        return self.remat and couples

    def row_chunks(self, training):
        """The output-row ranges routed one after another.

        Positions routed independently: one range, or in training with remat every row on its own.
        Routed across positions (:meth:`routes_across_positions`), in training and at inference: as
        many rows per chunk as keep a chunk's votes within :data:`CHUNK_VOTE_BYTES` per example.
        A router that couples the positions without ``remat``: one range.
        """
        out_h, out_w = self.output_grid
        if self.routes_across_positions():
            children = self.kernel_size * self.kernel_size * self._poses_shape[2]  # K*K*types per receptive field
            row_bytes = out_w * children * self.num_capsules * self.out_dim * 4
            rows = max(1, CHUNK_VOTE_BYTES // row_bytes)
            return [(row, min(row + rows, out_h)) for row in range(0, out_h, rows)]
        if not self.rematerializes(training) or getattr(self.router, "child_grid", None) is not None:
            return [(0, out_h)]
        return [(row, row + 1) for row in range(out_h)]

    def route_positions(self, poses, activations, training, return_coupling=False, **router_kwargs):
        """Gathers every receptive field, computes its votes and routes them: the layer without the final reshape.

        Args:
            poses: ``(batch, H, W, types, in_dim)``; activations: ``(batch, H, W, types)`` or ``None``.
            router_kwargs: extra router call arguments (``ConcurrentRouting``'s ``initial_poses``
                ``(batch * H_out * W_out, num_capsules, out_dim)``, ``steps``, ``finalize``).

        Returns:
            The router's outputs, positions folded into the batch: ``(batch * H_out * W_out,
            num_capsules, out_dim)``, ``(batch * H_out * W_out, num_capsules)`` [, coupling].
        """
        out_h, out_w = self.output_grid
        batch = ops.shape(poses)[0]
        chunks = self.row_chunks(training)
        if self.routes_across_positions():
            return self._route_across_positions(poses, activations, chunks, training, return_coupling)
        initial = router_kwargs.pop("initial_poses", None)
        outputs = []
        for rows in chunks:
            chunk_initial = initial
            if initial is not None and len(chunks) > 1:
                grid = ops.reshape(initial, (batch, out_h * out_w) + tuple(initial.shape[1:]))
                chunk_initial = ops.reshape(grid[:, rows[0] * out_w : rows[1] * out_w], (-1,) + tuple(initial.shape[1:]))
            after = sequence_token(outputs[-1]) if outputs else None
            outputs.append(self._route_rows(poses, activations, chunk_initial, after, rows, training, return_coupling, router_kwargs))
        counts = [(stop - start) * out_w for start, stop in chunks]
        return tuple(join_position_chunks(list(parts), counts) for parts in zip(*outputs))

    def _route_across_positions(self, poses, activations, chunks, training, return_coupling):
        """:meth:`route_positions` for a router that couples the positions (EM's ``child_grid``).

        The receptive fields are gathered once and split into the row chunks (one ``split``: its
        gradient is one ``concatenate``); the router makes each chunk's votes from them when it needs
        them (``route_position_chunks``), so the layer's whole vote tensor is never formed.
        """
        out_w = self.output_grid[1]
        counts = [(stop - start) * out_w for start, stop in chunks]
        inputs = [split_position_chunks(self._gather(poses), counts)]
        if activations is not None:
            inputs.append(split_position_chunks(self._gather(activations), counts))
        positions = [(start * out_w, stop * out_w) for start, stop in chunks]

        def votes_of(children, acts=None):
            return self.vote_transform(children, parent_major=True), acts

        return self.router.route_position_chunks(
            list(zip(positions, zip(*inputs))),
            votes_of,
            self.vote_transform.compute_dtype,
            training,
            return_coupling,
            remat=self.rematerializes(training),
        )

    def _route_rows(self, poses, activations, initial, after, rows, training, return_coupling, router_kwargs):
        """:meth:`route_positions` for the output rows ``rows``, rematerialised in training (``remat``).

        ``after``: the previous chunk's :func:`~keras_capsules.routing.base.sequence_token` (or ``None``),
        added to this chunk's children so that the chunks take turns, forward and backward.
        """
        given = {"poses": poses, "activations": activations, "initial_poses": initial, "after": after}
        names = [name for name, value in given.items() if value is not None]

        def run(*values):
            tensors = dict(zip(names, values))
            kwargs = dict(router_kwargs)
            if "initial_poses" in tensors:
                kwargs["initial_poses"] = tensors["initial_poses"]
            children = self._gather(tensors["poses"], rows)
            if "after" in tensors:
                children = children + ops.cast(tensors["after"], children.dtype)
            acts = self._gather(tensors["activations"], rows) if "activations" in tensors else None
            return self.vote_and_route(children, acts, training, return_coupling, **kwargs)

        if self.rematerializes(training):
            run = keras.remat(run)
        return run(*[given[name] for name in names])

    def call(self, inputs, training=None, return_coupling=False):
        poses, activations = unpack_capsules(self, inputs)
        self.check_input_shape(poses)
        batch = ops.shape(poses)[0]
        outputs = self.route_positions(poses, activations, training, return_coupling)
        out_h, out_w = self.output_grid
        out_poses = ops.reshape(outputs[0], (batch, out_h, out_w, self.num_capsules, self.out_dim))
        out_acts = ops.reshape(outputs[1], (batch, out_h, out_w, self.num_capsules))
        return (out_poses, out_acts) + tuple(outputs[2:])

    def get_config(self):
        config = super().get_config()
        config.update({"kernel_size": self.kernel_size, "strides": self.strides, "padding": self.padding, "remat": self.remat})
        return config
