"""Routing across the output positions of a convolutional capsule layer (the routers' ``child_grid`` option).

A child of a convolutional capsule layer feeds every output position whose receptive field holds it. The
router contract folds the positions into the batch, so a router normalises a child over the parent types at
one position; :class:`CrossPositionRouting` gives a router the layer's geometry so that it normalises each
child over every parent position and type it feeds instead (EM's E-step as in Hinton et al. 2018 and IBM's
code; variational Bayes' ``q(z)`` as in the authors' code).
"""

import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.ops.softmax import softmax_along
from keras_capsules.routing.base import child_major

#: Log-space value given to the padding slots of the cross-position normaliser (finite, so no NaN). IBM instead
#: scatters into a dense (parent positions x child positions) layout and fills the unconnected entries with
#: ``min(min(zz), -100)``, which leaves a tiny share of the mass on unconnected parents (a large share when every
#: ``zz`` of a child is below -100); with gather tables and this filler the softmax is exact.
LOG_FILLER = -1e30


def spatial_routing_tables(child_grid, kernel_size, strides, padding):
    """Static index tables of the cross-position normalisation of a convolutional capsule layer.

    Children are the (padded) input positions, parents the output positions; the layout is the one
    :class:`~keras_capsules.layers.ConvCaps` uses (positions folded into the batch in (row, column)
    order; children of a receptive field in (kernel row, kernel column) order).

    Args:
        child_grid: ``(H, W)`` of the convolutional capsule layer's input.
        kernel_size, strides, padding: of that layer.

    Returns:
        ``(slot_child, child_slots, parents_per_slot)``:

        - ``slot_child``: int32 ``(P * K*K,)``, the padded child position read by every
          (output position, kernel offset) slot;
        - ``child_slots``: int32 ``(C, max_parents)``, for every padded child position the slots
          that read it, padded with the sentinel ``P * K*K``;
        - ``parents_per_slot``: float32 ``(P * K*K,)``, how many parent positions the slot's child
          feeds (IBM's ``parents_per_child``).
    """
    from keras_capsules.ops.patches import patch_indices

    height, width = child_grid
    slot_child, pads, padded_width = patch_indices(height, width, kernel_size, strides, padding)
    num_children = (height + pads[0] + pads[1]) * padded_width
    counts = np.bincount(slot_child, minlength=num_children)
    max_parents = max(int(counts.max()), 1)
    sentinel = slot_child.size
    child_slots = np.full((num_children, max_parents), sentinel, dtype="int32")
    order = np.argsort(slot_child, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(slot_child.size) - starts[slot_child[order]]
    child_slots[slot_child[order], rank] = order
    return slot_child.astype("int32"), child_slots, counts[slot_child].astype("float32")


class CrossPositionRouting:
    """Mixed into a :class:`~keras_capsules.routing.Router` whose constructor takes a convolutional layer's geometry.

    The router calls :meth:`init_child_grid` from its constructor, :meth:`build_child_grid` from
    ``build_router`` and normalises its log-space assignments with :meth:`parent_softmax` (with
    ``child_grid`` set, over each child's parents at every position, :meth:`spatial_log_normalizer`);
    :meth:`child_grid_config` goes into its ``get_config``. Without ``child_grid`` (``None``) nothing changes: a child is normalised over the
    parent types at its position.

    Attributes set: ``child_grid``, ``kernel_size``, ``strides``, ``padding``; once built with ``child_grid``,
    the tables of :func:`spatial_routing_tables` (``_tables``, otherwise ``None``), ``num_positions``
    (the layer's output positions ``P``) and ``child_types``.
    """

    accepts_child_grid = True

    def init_child_grid(self, child_grid, kernel_size, strides, padding):
        """Checks and stores the geometry (the constructor's ``child_grid``, ``kernel_size``, ``strides``, ``padding``)."""
        if child_grid is not None:
            if not isinstance(child_grid, (list, tuple)) or len(child_grid) != 2:
                errors.fail(self, "child_grid", "None or a pair (H, W)", child_grid)
            for size in child_grid:
                errors.check_positive_int(self, "child_grid", size)
            child_grid = tuple(int(s) for s in child_grid)
        self.child_grid = child_grid
        self.kernel_size = errors.check_positive_int(self, "kernel_size", kernel_size)
        self.strides = errors.check_positive_int(self, "strides", strides)
        self.padding = errors.check_one_of(self, "padding", padding, ("valid", "same"))
        self._tables = None

    def build_child_grid(self, votes_shape):
        """Makes the index tables for votes ``(batch * P, K*K*types, out_caps, d)`` (``child_grid`` only)."""
        self._tables = None
        if self.child_grid is None:
            return
        in_caps, kk = votes_shape[1], self.kernel_size * self.kernel_size
        if in_caps % kk:
            errors.fail(
                self,
                "votes",
                f"in_caps divisible by kernel_size**2 = {kk} (K*K*types children per receptive field) with child_grid set",
                f"shape {tuple(votes_shape)}",
            )
        self._tables = spatial_routing_tables(self.child_grid, self.kernel_size, self.strides, self.padding)
        self.num_positions = self._tables[0].size // kk
        self.child_types = in_caps // kk

    def parent_softmax(self, logits):
        """Softmax of parent-major ``(batch, out_caps, in_caps)`` logits over each child's parents: the parent
        types at its position, or with ``child_grid`` every parent position and type it feeds."""
        if self._tables is None:
            return softmax_along(logits, axis=1)
        return ops.exp(logits - self.spatial_log_normalizer(logits))

    def spatial_log_normalizer(self, logits):
        """Log of the softmax denominator over every (position, type) parent of each child, ``(batch, 1, in)``.

        ``logits``: parent-major ``(batch * P, out_caps, K*K*types)``, the ``P`` output positions of every
        example folded into the batch (row-major). ``exp(logits - spatial_log_normalizer(logits))`` sums
        to one over the parents of each child.
        """
        slot_child, child_slots, _ = self._tables
        kk = self.kernel_size * self.kernel_size
        out_caps = logits.shape[1]
        slots = ops.reshape(child_major(logits), (-1, self.num_positions * kk, self.child_types, out_caps))
        filler = ops.full_like(slots[:, :1], LOG_FILLER)
        padded = ops.concatenate([slots, filler], axis=1)
        num_children, max_parents = child_slots.shape
        gathered = ops.take(padded, ops.convert_to_tensor(child_slots.reshape(-1)), axis=1)
        gathered = ops.reshape(gathered, (-1, num_children, max_parents, self.child_types, out_caps))
        peak = ops.stop_gradient(ops.max(gathered, axis=(2, 4), keepdims=True))
        total = ops.sum(ops.exp(gathered - peak), axis=(2, 4))  # (batch, children, types)
        log_norm = ops.log(total) + ops.squeeze(peak, axis=(2, 4))
        per_slot = ops.take(log_norm, ops.convert_to_tensor(slot_child), axis=1)  # (batch, P*KK, types)
        return ops.reshape(per_slot, (-1, 1, kk * self.child_types))

    def child_grid_config(self):
        """The geometry's entries of ``get_config``."""
        return {
            "child_grid": None if self.child_grid is None else list(self.child_grid),
            "kernel_size": self.kernel_size,
            "strides": self.strides,
            "padding": self.padding,
        }
