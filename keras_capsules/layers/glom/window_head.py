"""Base of the window-wise downsampling heads (``DissimilarityHead``, ``WindowAveragePooling``, ``WindowMaxPooling``)."""

from collections.abc import Sequence

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import as_float
from keras_capsules.layers.glom import _utils
from keras_capsules.serialization import register


@register
class WindowHead(keras.layers.Layer):
    """Splits a grid of embeddings into non-overlapping ``window x window`` windows and reduces each to one embedding.

    Input: tokens ``(batch, h*w, d)`` in row-major grid order, or a grid ``(batch, h, w, d)``.
    Output: ``(batch, (h/p)*(w/p), d)`` or ``(batch, h/p, w/p, d)`` with ``p = window`` (windows in
    row-major order, as the code's ``Unfold``).

    Subclasses implement ``reduce(windows)``: ``(batch, P, p*p, d) -> (batch, P, d)``.

    Args:
        window: window side and stride ``p`` (code: 4, so 8x8 -> 2x2).
        grid_shape: ``(h, w)`` for token inputs; ``None`` means a square grid.
    """

    def __init__(self, window: int = 4, grid_shape: Sequence[int] | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.window = errors.check_positive_int(self, "window", window)
        self.grid_shape = None if grid_shape is None else tuple(int(g) for g in grid_shape)

    def _grid(self, input_shape):
        if len(input_shape) == 4:
            grid = tuple(input_shape[1:3])
            if None in grid:
                errors.fail(self, "inputs", "a grid with known height and width", f"shape {tuple(input_shape)}")
            if self.grid_shape is not None and self.grid_shape != grid:
                errors.fail(self, "grid_shape", f"None or the input grid {grid}", self.grid_shape)
            return grid
        if input_shape[1] is None:
            errors.fail(self, "inputs", "tokens with a known number of columns", f"shape {tuple(input_shape)}")
        return _utils.resolve_grid(self, "grid_shape", input_shape[1], self.grid_shape)

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, (3, 4), "(batch, h*w, d) or (batch, h, w, d)")
        grid = self._grid(input_shape)
        if grid[0] % self.window or grid[1] % self.window:
            errors.fail(
                self,
                "inputs",
                f"a grid whose height and width are multiples of window={self.window} (e.g. pad 28x28 images to 32x32 "
                "for an 8x8 grid, or pick a window that divides the grid)",
                f"a {grid[0]}x{grid[1]} grid (input shape {tuple(input_shape)})",
            )
        self._grid_hw = grid

    def reduce(self, windows):
        raise NotImplementedError

    def call(self, inputs):
        inputs = as_float(self, inputs)
        grid_input = len(inputs.shape) == 4
        h, w = self._grid_hw
        tokens = ops.reshape(inputs, (-1, h * w, inputs.shape[-1])) if grid_input else inputs
        out = self.reduce(_utils.partition_windows(tokens, (h, w), self.window))
        if grid_input:
            out = ops.reshape(out, (-1, h // self.window, w // self.window, inputs.shape[-1]))
        return out

    def compute_output_shape(self, input_shape):
        h, w = self._grid(input_shape)
        p = self.window
        if len(input_shape) == 4:
            return (input_shape[0], h // p, w // p, input_shape[-1])
        return (input_shape[0], (h // p) * (w // p), input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update({"window": self.window, "grid_shape": self.grid_shape})
        return config
