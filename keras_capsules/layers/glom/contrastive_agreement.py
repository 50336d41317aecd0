"""Contrastive agreement enhancer ``A_CAE`` (Zeng et al., eqs. 2-7; docs/reference/glom.md#contrastive-agreement-enhancer)."""

from collections.abc import Sequence

import keras
import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.glom import _utils
from keras_capsules.serialization import register

#: Negative weight the code leaves outside the locality radius (``masked_fill(non_local, 1e-10)``).
OUTSIDE_NEGATIVE = 1e-10


def _thresholds(owner, argument, value):
    if errors.is_number(value):
        return float(value)
    if isinstance(value, (list, tuple)) and value and all(errors.is_number(v) for v in value):
        return tuple(float(v) for v in value)
    errors.fail(owner, argument, "a float or a non-empty list of floats (one per level)", value)


@register
class ContrastiveAgreement(keras.layers.Layer):
    """CAE: pulls each column towards similar columns and pushes it away from dissimilar ones.

    Per level, with ``S_nm = cos(f_n, f_m)`` (eq. 2; the diagonal is the constant 5e-4 unless
    ``attend_self``):

    - negatives (eqs. 3-4): ``S_e = S * 1[S < down]``;
    - positives (eq. 5): ``S_p = S`` where ``S >= up``, ``-inf`` elsewhere;
    - output (eqs. 6-7): ``softmax_m(S_p) f - (S_e f) / N``.

    ``normalize_negatives=True`` divides the negative term by the number of columns N, as the code
    does; ``False`` is the paper's eq. 6 (no ``1/N``). With ``radius > 0`` (code: 3; the paper has no
    radius) columns farther than ``radius`` grid cells are no positives and get the code's negative
    weight 1e-10 (effectively none). Masked logits use -1e9, so a row without positives gives a
    uniform softmax (as the code's finite ``-max``), never NaN. Computed in float32.

    Input: ``(batch, N, d)`` or ``(batch, N, levels, d)``. Output: same shape.

    Args:
        up_threshold: positive threshold ``up`` (a float, or one per level). Code: 0 at the bottom
            level, -0.2 at the top.
        down_threshold: negative threshold ``down``; ``None`` uses ``up_threshold`` (the code's choice).
        radius: locality radius in grid cells; 0 is global (paper).
        grid_shape: ``(h, w)`` of the columns for ``radius > 0``; ``None`` means square.
        attend_self: keep the true self-similarity (code: False, the diagonal is 5e-4).
        normalize_negatives: divide the negative term by N (code) or not (paper).
    """

    def __init__(
        self,
        up_threshold: float | Sequence[float] = 0.0,
        down_threshold: float | Sequence[float] | None = None,
        radius: float = 3,
        grid_shape: Sequence[int] | None = None,
        attend_self: bool = False,
        normalize_negatives: bool = True,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.up_threshold = _thresholds(self, "up_threshold", up_threshold)
        self.down_threshold = None if down_threshold is None else _thresholds(self, "down_threshold", down_threshold)
        if not errors.is_number(radius) or radius < 0:
            errors.fail(self, "radius", "a number >= 0 (0: global)", radius)
        self.radius = int(radius) if errors.is_integer(radius) else float(radius)
        self.grid_shape = None if grid_shape is None else tuple(int(g) for g in grid_shape)
        self.attend_self = bool(attend_self)
        self.normalize_negatives = bool(normalize_negatives)
        self._non_local = None

    def _per_level(self, argument, value, levels):
        values = np.asarray(value, dtype="float32").reshape(-1)
        if values.size == 1:
            values = np.repeat(values, levels)
        if values.size != levels:
            errors.fail(self, argument, f"a float or {levels} values (one per level of the input)", value)
        return values

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, (3, 4), "(batch, N, d) or (batch, N, levels, d)")
        levels = 1 if len(input_shape) == 3 else input_shape[2]
        up = self._per_level("up_threshold", self.up_threshold, levels)
        down = up if self.down_threshold is None else self._per_level("down_threshold", self.down_threshold, levels)
        self._up, self._down = up[None, :, None, None], down[None, :, None, None]
        if self.radius > 0:
            if input_shape[1] is None:
                errors.fail(
                    self, "inputs", "a known number of columns N when radius > 0", f"shape {tuple(input_shape)}"
                )
            grid = _utils.resolve_grid(self, "grid_shape", input_shape[1], self.grid_shape)
            self._non_local = _utils.non_local_mask(grid, self.radius)

    def call(self, inputs):
        f, squeezed = _utils.as_levels(self, inputs)
        num = f.shape[1]
        values = ops.cast(f, "float32")
        unit = _utils.l2_normalize(values)
        sim = ops.einsum("bild,bjld->blij", unit, unit)
        if not self.attend_self:
            sim = ops.where(_utils.eye_mask(num), _utils.SELF_SIMILARITY, sim)
        negative = ops.where(ops.less(sim, self._down), sim, 0.0)
        if self._non_local is not None:
            non_local = ops.convert_to_tensor(self._non_local)
            sim = ops.where(non_local, _utils.MASK_VALUE, sim)
            negative = ops.where(non_local, OUTSIDE_NEGATIVE, negative)
        positive = ops.softmax(ops.where(ops.less(sim, self._up), _utils.MASK_VALUE, sim), axis=-1)
        pull = ops.einsum("blij,bjld->bild", positive, values)
        push = ops.einsum("blij,bjld->bild", negative, values)
        if self.normalize_negatives:
            push = push / num
        out = ops.cast(pull - push, f.dtype)
        return ops.squeeze(out, 2) if squeezed else out

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "up_threshold": self.up_threshold,
                "down_threshold": self.down_threshold,
                "radius": self.radius,
                "grid_shape": self.grid_shape,
                "attend_self": self.attend_self,
                "normalize_negatives": self.normalize_negatives,
            }
        )
        return config
