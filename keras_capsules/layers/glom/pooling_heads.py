"""Window average and max pooling heads: the Table 3 alternatives to ``H_d`` with the same interface."""

from keras import ops

from keras_capsules.layers.glom.window_head import WindowHead
from keras_capsules.ops.reductions import max_with_initial
from keras_capsules.serialization import register


@register
class WindowAveragePooling(WindowHead):
    """Average of each ``window x window`` window (the paper's avg-pool row of Table 3).

    Input: ``(batch, h*w, d)`` or ``(batch, h, w, d)``. Output: ``(batch, (h/p)*(w/p), d)`` or
    ``(batch, h/p, w/p, d)``.

    Args:
        window: window side and stride. grid_shape: ``(h, w)`` for token inputs (``None``: square).
    """

    def reduce(self, windows):
        return ops.mean(windows, axis=2)


@register
class WindowMaxPooling(WindowHead):
    """Channel-wise maximum over each ``window x window`` window (the paper's max-pool row of Table 3).

    Input: ``(batch, h*w, d)`` or ``(batch, h, w, d)``. Output: ``(batch, (h/p)*(w/p), d)`` or
    ``(batch, h/p, w/p, d)``.

    Args:
        window: window side and stride. grid_shape: ``(h, w)`` for token inputs (``None``: square).
    """

    def reduce(self, windows):
        return max_with_initial(
            windows, float("-inf"), axis=2
        )  # ``initial``: Keras' TF max refuses an empty batch otherwise
