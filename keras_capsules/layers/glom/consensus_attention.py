"""Simplified self-attention ``A_SA`` between the columns of one GLOM level (docs/reference/glom.md#attention-between-columns, eq. 1)."""

import math
from collections.abc import Sequence

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.glom import _utils
from keras_capsules.serialization import register


@register
class ConsensusAttention(keras.layers.Layer):
    """Eq. 1: every column attends to the same level of the other columns, with no projections.

    ``A_SA(f)_i = sum_j softmax_j(f_i . k_j / sqrt(d)) f_j`` with ``k_j = f_j / ||f_j||``: the code
    L2-normalises the keys while the paper states ``Q = K = V = f``. Without ``attend_self`` the
    self-logit is the constant 5e-4 (code). With ``radius > 0`` only columns within that Euclidean
    grid distance are attended (code default 0: global). Computed in float32, returned in the input dtype.

    Input: ``(batch, N, d)`` or ``(batch, N, levels, d)`` (each level attends separately).
    Output: same shape.

    Args:
        attend_self: keep the true self-logit (code default: False).
        radius: locality radius in grid cells; 0 is global.
        grid_shape: ``(h, w)`` of the columns, needed with ``radius > 0``; ``None`` means a square grid.
    """

    def __init__(
        self,
        attend_self: bool = False,
        radius: float = 0,
        grid_shape: Sequence[int] | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.attend_self = bool(attend_self)
        if not errors.is_number(radius) or radius < 0:
            errors.fail(self, "radius", "a number >= 0 (0: global)", radius)
        self.radius = int(radius) if errors.is_integer(radius) else float(radius)
        self.grid_shape = None if grid_shape is None else tuple(int(g) for g in grid_shape)
        self._non_local = None

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, (3, 4), "(batch, N, d) or (batch, N, levels, d)")
        if self.radius > 0:
            if input_shape[1] is None:
                errors.fail(
                    self, "inputs", "a known number of columns N when radius > 0", f"shape {tuple(input_shape)}"
                )
            grid = _utils.resolve_grid(self, "grid_shape", input_shape[1], self.grid_shape)
            self._non_local = _utils.non_local_mask(grid, self.radius)

    def call(self, inputs):
        f, squeezed = _utils.as_levels(self, inputs)
        num, dim = f.shape[1], f.shape[-1]
        values = ops.cast(f, "float32")
        keys = _utils.l2_normalize(values)
        # Scaling the queries before the product bounds every partial sum by max|f| (Cauchy-Schwarz
        # against a unit key), so logits of inputs near float32's/bfloat16's largest value stay finite.
        sim = ops.einsum("bild,bjld->blij", values / math.sqrt(dim), keys)
        if not self.attend_self:
            sim = ops.where(_utils.eye_mask(num), _utils.SELF_SIMILARITY, sim)
        if self._non_local is not None:
            sim = ops.where(ops.convert_to_tensor(self._non_local), _utils.MASK_VALUE, sim)
        out = ops.einsum("blij,bjld->bild", ops.softmax(sim, axis=-1), values)
        out = ops.cast(out, f.dtype)
        return ops.squeeze(out, 2) if squeezed else out

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"attend_self": self.attend_self, "radius": self.radius, "grid_shape": self.grid_shape})
        return config
