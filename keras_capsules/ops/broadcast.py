"""A small parameter broadcast over a large tensor's leading axes, with a gradient XLA runs in parallel."""

from keras import ops


def broadcast_rows(parameter, rows):
    """``parameter`` ``(d,)`` broadcast to ``rows + (d,)``; its gradient is summed by one matrix product.

    The gradient of a parameter broadcast inside a large product, ``x * p`` with ``x`` of shape
    ``(batch, out_caps, in_caps, d)``, is a sum of that whole tensor down to ``d`` numbers, which
    XLA's CPU backend runs 2.3x slower than summing the ``in_caps`` axis first (``batch * out_caps *
    d`` outputs) and the rest with a matrix product (88 against 39 ms at ``(1600, 16, 72, 16)``, 2
    cores); it merges two plain sums back into the slow one. Broadcasting ``p`` first
    to ``(batch, out_caps, 1, d)`` with this function gives that order: the product's gradient sums
    ``in_caps`` into this function's output, and this function sums the rows with a product by ones.
    Values and gradients are those of ``broadcast_to``.

    Args:
        parameter: ``(d,)``.
        rows: the leading shape, e.g. ``(batch, out_caps, 1)``; entries may be dynamic.

    Returns:
        ``rows + (d,)``.
    """
    depth = parameter.shape[-1]

    @ops.custom_gradient
    def broadcast(value):
        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            flat = ops.reshape(upstream, (-1, depth))
            return ops.reshape(ops.matmul(ops.transpose(ops.ones_like(flat[:, :1])), flat), (depth,))

        return ops.broadcast_to(value, tuple(rows) + (depth,)), grad

    return broadcast(parameter)
