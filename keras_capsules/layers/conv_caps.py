"""Convolutional capsule layer."""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import check_activations_shape, unpack_capsules, unpack_shapes
from keras_capsules.layers.routed_capsules import RoutedCapsules
from keras_capsules.ops.patches import output_size, patch_indices
from keras_capsules.ops.remat import recomputing, remat_reading
from keras_capsules.ops.sequential import in_turn, map_in_turn
from keras_capsules.routing.base import stack_position_chunks, unstack_position_chunks
from keras_capsules.serialization import register

#: A router that couples the output positions (EM's ``child_grid``), and at inference every router,
#: routes chunks of output rows whose votes take at most this many bytes per example (float32; at
#: least one row): the layer's transient memory, not its whole vote tensor's.
CHUNK_VOTE_BYTES = 16 * 2**20


@register
class ConvCaps(RoutedCapsules):
    """Convolutional capsules: each output position routes the children of its ``K x K`` receptive field.

    The receptive fields are gathered once with one index gather (no per-parent copies of the input);
    output positions are folded into the batch axis, so every router works unchanged and parents at
    different positions do not compete (the apple/IDPA convention; cross-position normalisation is an
    option of the EM and variational-Bayes routers, ``child_grid``). The transform weights depend on the
    kernel offset, the input type and the output type and are shared across positions.

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
            votes and the routing there (``keras.remat``). The votes,
            ``(batch * H_out * W_out, K*K*in_types, num_capsules, out_dim)``, are by far the layer's
            largest tensor (925 MB for InvertedAttentionCapsNet's first layer at batch 32); without
            ``remat`` every call (every concurrent-routing sweep) keeps its own copies until the
            backward pass. With ``remat`` the output rows are also routed one row at a time (positions
            route independently) in a loop traced once whatever the number of rows: the votes alive
            at any moment are one row's, the gathered receptive fields (``K*K`` / ``s**2`` times the
            input, a ``num_capsules * out_dim / in_dim``-th of the votes) are kept, and the first
            step's graph does not grow with the image. Costs one more forward computation of the
            layer per training step. Not applied to routers with random or moving state (dropout,
            batch-norm statistics), which a recomputation would change.
            At inference (``remat`` has no backward pass to save for there) the positions are routed
            by chunks of rows whose votes stay within :data:`CHUNK_VOTE_BYTES` per example, the chunks
            differing by at most one row, one after another (unrolled, for the ONNX and LiteRT
            converters; each chunk gathers its own receptive fields): the same results, with the
            transient memory of a chunk's votes instead of the whole tensor's.
            A router that couples the positions (EM with ``child_grid``) is routed by equal chunks of
            rows whose votes stay within :data:`CHUNK_VOTE_BYTES` per example, in training (in a loop
            traced once per iteration) and at inference (unrolled, for the ONNX and LiteRT converters)
            (``EMRouter.route_position_chunks``): the whole vote tensor is never formed, every iteration
            makes each chunk's votes anew (and training recomputes them in the backward pass), about
            1.7x the matrix products of routing the whole tensor; ``remat=False`` routes the whole
            tensor and keeps everything for the backward pass (same results to float32 rounding).
            A router that couples the positions without ``route_position_chunks`` (variational Bayes with
            ``child_grid``) routes the whole vote tensor at once, in training and at inference.
            Inside :func:`~keras_capsules.ops.recomputation` ``(False)`` (what
            :func:`~keras_capsules.training.train` uses when the memory plan finds that the step fits
            without rematerialisation) the layer acts as with ``remat=False``; ``remat`` itself, and the
            saved config, are unchanged.
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

    def _gather(self, grid):
        """``(batch, H, W, types, ...)`` -> ``(batch * H_out * W_out, K*K*types, ...)``."""
        return self._take_fields(self._flat_grid(grid), (0, self.output_grid[0]))

    def _flat_grid(self, grid):
        """``(batch, H, W, types, ...)`` -> the padded grid's positions in one axis, ``(batch, H_pad * W_pad, types, ...)``."""
        top, bottom, left, right = self._pads
        if any(self._pads):
            widths = [(0, 0), (top, bottom), (left, right)] + [(0, 0)] * (len(grid.shape) - 3)
            grid = ops.pad(grid, widths)
        return ops.reshape(grid, (ops.shape(grid)[0], grid.shape[1] * grid.shape[2]) + tuple(grid.shape[3:]))

    def _take_fields(self, flat, rows):
        """The receptive fields of output rows ``rows = (first, stop)``: ``(batch * (stop - first) * W_out, K*K*types, ...)``."""
        out_w, field = self.output_grid[1], self.kernel_size * self.kernel_size
        first, stop = rows
        patches = ops.take(flat, self._indices[first * out_w * field : stop * out_w * field], axis=1)
        trailing = tuple(flat.shape[2:])
        return ops.reshape(patches, (-1, field * trailing[0]) + trailing[1:])

    def _remat_here(self):
        """``remat``, unless the call is traced in :func:`~keras_capsules.ops.remat.recomputation` ``(False)``."""
        return self.remat and recomputing()

    def rematerializes(self, training):
        """Whether this call recomputes its votes in the backward pass (see ``remat``)."""
        random = getattr(self.router, "seed_generator", None) is not None
        return bool(training) and self._remat_here() and not random and not self.router.non_trainable_weights

    def routes_across_positions(self):
        """Whether the layer routes chunk by chunk through its router's ``route_position_chunks``: with
        ``remat``, for a router that couples the output positions (EM with ``child_grid``)."""
        couples = getattr(self.router, "child_grid", None) is not None and hasattr(self.router, "route_position_chunks")
        return self._remat_here() and couples

    def row_chunks(self, training):
        """The output-row ranges routed one after another.

        Without ``remat``, or for a router that couples the positions without ``route_position_chunks``
        (variational Bayes with ``child_grid``): one range. Positions routed independently: in training
        (where the layer rematerialises) every row on its own; at inference as few chunks as keep a chunk's votes within
        :data:`CHUNK_VOTE_BYTES` per example, differing by at most one row (one range when the whole
        tensor fits). Routed across positions (:meth:`routes_across_positions`), in training and at
        inference: equal chunks (the router loops over them), each the most rows that divide the output
        height and keep a chunk's votes within the budget (at least one row).
        """
        out_h, out_w = self.output_grid
        children = self.kernel_size * self.kernel_size * self._poses_shape[2]  # K*K*types per receptive field
        row_bytes = out_w * children * self.num_capsules * self.out_dim * 4
        if self.routes_across_positions():
            rows = max(
                d for d in range(1, out_h + 1) if out_h % d == 0 and (d == 1 or d * row_bytes <= CHUNK_VOTE_BYTES)
            )
            return [(row, row + rows) for row in range(0, out_h, rows)]
        if not self._remat_here() or getattr(self.router, "child_grid", None) is not None:
            return [(0, out_h)]
        if training:
            return [(row, row + 1) for row in range(out_h)] if self.rematerializes(training) else [(0, out_h)]
        count = -(-out_h // max(1, CHUNK_VOTE_BYTES // row_bytes))
        bounds = [index * out_h // count for index in range(count + 1)]
        return list(zip(bounds[:-1], bounds[1:]))

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
        chunks = self.row_chunks(training)
        if self.routes_across_positions():
            return self._route_across_positions(poses, activations, chunks, training, return_coupling)
        if len(chunks) > 1 and training:
            return self._route_rows_in_turn(poses, activations, training, return_coupling, router_kwargs)
        if len(chunks) > 1:
            return self._route_row_ranges(poses, activations, chunks, return_coupling, router_kwargs)
        return self._route_all_rows(poses, activations, training, return_coupling, router_kwargs)

    def _route_across_positions(self, poses, activations, chunks, training, return_coupling):
        """:meth:`route_positions` for a router that couples the positions (EM's ``child_grid``).

        The receptive fields are gathered once and stacked by chunk of rows
        (:func:`~keras_capsules.routing.base.stack_position_chunks`); the router makes each chunk's votes
        from them when it needs them (``route_position_chunks``), so the layer's whole vote tensor is
        never formed.
        """
        positions = self.output_grid[0] * self.output_grid[1]
        inputs = [stack_position_chunks(self._gather(poses), positions, len(chunks))]
        if activations is not None:
            inputs.append(stack_position_chunks(self._gather(activations), positions, len(chunks)))

        def votes_of(children, acts=None):
            return self.vote_transform(children, parent_major=True), acts

        return self.router.route_position_chunks(
            inputs,
            votes_of,
            self.weights,
            self.vote_transform.compute_dtype,
            training,
            return_coupling,
            remat=self.rematerializes(training),
        )

    def _route_all_rows(self, poses, activations, training, return_coupling, router_kwargs):
        """:meth:`route_positions` in one piece, rematerialised in training (``remat``) where it applies."""
        given = {"poses": poses, "activations": activations, "initial_poses": router_kwargs.pop("initial_poses", None)}
        names = [name for name, value in given.items() if value is not None]

        def run(*values):
            tensors = dict(zip(names, values))
            kwargs = dict(router_kwargs)
            if "initial_poses" in tensors:
                kwargs["initial_poses"] = tensors["initial_poses"]
            acts = self._gather(tensors["activations"]) if "activations" in tensors else None
            return self.vote_and_route(self._gather(tensors["poses"]), acts, training, return_coupling, **kwargs)

        if self.rematerializes(training):
            run = keras.remat(run)
        return run(*[given[name] for name in names])

    def _route_rows_in_turn(self, poses, activations, training, return_coupling, router_kwargs):
        """:meth:`route_positions` one output row after another (training with ``remat``, positions routed independently).

        The receptive fields are gathered once, ``(H_out, batch * W_out, K*K*types, in_dim)`` by row;
        a loop (:func:`~keras_capsules.ops.sequential.map_in_turn`) routes one row at a time,
        rematerialised, so the votes alive at any moment are one row's, and the routing is traced
        once for the whole layer rather than once per row (the first step's graph, and its tracing
        time, do not grow with the image).
        """
        out_h, out_w = self.output_grid
        rows = {"poses": stack_position_chunks(self._gather(poses), out_h * out_w, out_h)}
        if activations is not None:
            rows["activations"] = stack_position_chunks(self._gather(activations), out_h * out_w, out_h)
        initial = router_kwargs.pop("initial_poses", None)
        if initial is not None:
            rows["initial_poses"] = stack_position_chunks(initial, out_h * out_w, out_h)

        def route_row(*row):
            row = dict(zip(rows, row))
            kwargs = dict(router_kwargs)
            if "initial_poses" in row:
                kwargs["initial_poses"] = row["initial_poses"]
            return tuple(self.vote_and_route(row["poses"], row.get("activations"), training, return_coupling, **kwargs))

        route_row = remat_reading(route_row, self.weights)
        outputs = map_in_turn(lambda row: route_row(*row), tuple(rows.values()))
        return tuple(unstack_position_chunks(x, out_w) for x in outputs)

    def _route_row_ranges(self, poses, activations, chunks, return_coupling, router_kwargs):
        """:meth:`route_positions` at inference, chunk of rows after chunk (positions routed independently).

        Each chunk gathers its own receptive fields from the padded grid and routes them
        (:func:`~keras_capsules.ops.sequential.in_turn`: a graph without loops, one chunk's votes alive
        at a time); the outputs are put back in position order, ``(batch * H_out * W_out, ...)``.
        """
        out_w, positions = self.output_grid[1], self.output_grid[0] * self.output_grid[1]
        flat_acts = self._flat_grid(activations) if activations is not None else None
        initial = router_kwargs.pop("initial_poses", None)
        if initial is not None:
            initial = ops.reshape(initial, (-1, positions) + tuple(initial.shape[1:]))

        def route_chunk(part):
            flat_poses, rows = part  # the poses grid carries in_turn's token: the chunk waits for the previous one
            acts = self._take_fields(flat_acts, rows) if activations is not None else None
            kwargs = dict(router_kwargs)
            if initial is not None:
                per_example = initial[:, rows[0] * out_w : rows[1] * out_w]
                kwargs["initial_poses"] = ops.reshape(per_example, (-1,) + tuple(initial.shape[2:]))
            return tuple(
                self.vote_and_route(self._take_fields(flat_poses, rows), acts, False, return_coupling, **kwargs)
            )

        flat_poses = self._flat_grid(poses)
        outputs = in_turn(route_chunk, [(flat_poses, rows) for rows in chunks])
        return tuple(self._join_rows(parts, chunks) for parts in zip(*outputs))

    def _join_rows(self, parts, chunks):
        """Each chunk's outputs ``(batch * rows * W_out, ...)``, in row order -> ``(batch * H_out * W_out, ...)``."""
        trailing, out_w = tuple(parts[0].shape[1:]), self.output_grid[1]
        per_example = [
            ops.reshape(part, (-1, (stop - first) * out_w) + trailing) for part, (first, stop) in zip(parts, chunks)
        ]
        return ops.reshape(ops.concatenate(per_example, axis=1), (-1,) + trailing)

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
        config.update(
            {"kernel_size": self.kernel_size, "strides": self.strides, "padding": self.padding, "remat": self.remat}
        )
        return config
