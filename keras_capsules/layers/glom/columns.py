"""``GlomColumns``: K levels of embeddings per column, refined for T iterations (docs/reference/glom.md#column-networks, eq. 8)."""

from collections.abc import Sequence

import keras
import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import as_float
from keras_capsules.layers.glom.column_mlp import ColumnMLP
from keras_capsules.layers.glom.consensus_attention import ConsensusAttention
from keras_capsules.layers.glom.contrastive_agreement import ContrastiveAgreement
from keras_capsules.serialization import register

#: The code's fixed top-down fusion weight (``self.we``); the paper describes it as trainable.
CODE_TOP_DOWN_WEIGHT = 0.016385
#: The code's CAE thresholds at the bottom and the top level.
BOTTOM_THRESHOLD, TOP_THRESHOLD = 0.0, -0.2


def default_agreement_thresholds(levels):
    """CAE thresholds per level: 0 at the bottom, -0.2 at the top, linearly interpolated between.

    The code has exactly two levels (0 and -0.2); the interpolation for K > 2 is our choice
    (docs/reference/glom.md#open-questions). A single level gets the bottom value 0.
    """
    if levels == 1:
        return [BOTTOM_THRESHOLD]
    return [float(round(v, 10)) for v in np.linspace(BOTTOM_THRESHOLD, TOP_THRESHOLD, levels)]


@register
class GlomColumns(keras.layers.Layer):
    """The GLOM column dynamics of the agreement-aware, dissimilarity-oriented GLOM (Zeng et al.).

    Every column (patch) holds ``levels`` embeddings of size ``d``, initialised from a learnable
    ``(levels, d)`` table (``randn``) shared by all columns. The tokens are a fixed level 0. Each of
    the ``iterations`` steps updates every level ``k`` with eq. 8::

        f^k <- ( w_la f^k + w_bu N_BU(f^{k-1}) + w_td N_TD(f^{k+1}) + w_as A_SA(f^k) + w_ac A_CAE(f^k) ) / n_k

    - ``N_BU`` / ``N_TD``: :class:`ColumnMLP` with one MLP per level (GELU / sin); the top level has
      no top-down term (zero).
    - ``A_SA``: :class:`ConsensusAttention` (eq. 1); ``A_CAE``: :class:`ContrastiveAgreement`
      (eqs. 2-7) with per-level thresholds (default 0 at the bottom to -0.2 at the top, linear).
    - ``w_la, w_bu, w_as, w_ac``: trainable scalars initialised at ``fusion_init`` (0.2). ``w_td`` is
      the code's fixed 0.016385 unless ``trainable_top_down_weight`` (the paper: trainable).
    - ``n_k``: with ``divide_by_contributions`` (code) the sum is divided by the number of terms (5,
      and 4 at the top level, which has no top-down term); the paper's eq. 8 has no division.
    - Weight layout differs from the code only in the top-down MLP's group order (the code flips the
      levels before its grouped convolution; here group ``k`` predicts level ``k`` from ``k + 1``).

    Input: tokens ``(batch, N, d)`` (N columns in row-major grid order). Output: the levels after
    the last iteration ``(batch, N, levels, d)``; with ``return_iterations`` the initial state and
    every iteration ``(batch, iterations + 1, N, levels, d)`` (also a call argument). With
    ``return_agreement=True`` in the call, a pair ``(levels, agreement)`` where ``agreement`` is the
    CAE output of the last iteration ``(batch, N, levels, d)`` (what the code's TV metric uses).

    Parameters (N = 64, d = 128, K = 2): bottom-up 132,608, top-down 66,560, initial levels 256, fusion
    weights 4.

    Untrained, with every per-patch LayerNorm offset at 0 (PyTorch's initialisation, as the code), the
    levels above the bottom one are the same in every column after the first iteration, and the column
    MLPs' LayerNorms over the patch axis amplify their ~1e-8 rounding differences ~316x per layer: from
    the second iteration on, outputs depend on the order of the sums (on a GPU, on the batch size) by
    up to about ``w_td / n_k``. The code behaves the same way. Training moves the offsets and removes
    this (a trained network gives the same values at every batch size; docs/export.md).

    Args:
        levels: number of levels K (any K >= 1).
        iterations: T; ``None`` is the code's ``2 * levels``.
        grid_shape: ``(h, w)`` of the columns for the locality radii; ``None`` means square.
        agreement_thresholds: ``None`` (default interpolation), or one threshold per level (used as
            both ``up`` and ``down``), or one ``[up, down]`` pair per level.
        agreement_radius: CAE locality radius (code: 3; 0 is global, the paper).
        normalize_negatives: the CAE negative term divided by N (code) or not (paper).
        attention_radius: ``A_SA`` locality radius (code: 0, global).
        attend_self: keep the true self-similarity in ``A_SA`` and CAE (code: False).
        use_agreement: include the CAE term (``False``: the Agglomerator-style ablation baseline,
            4 contributions, 3 at the top).
        fusion_init: initial value of the trainable fusion weights (0.2).
        top_down_weight: value (or initial value) of ``w_td``.
        trainable_top_down_weight: make ``w_td`` a trainable scalar.
        divide_by_contributions: divide by ``n_k`` (code) or not (paper).
        column_depth: Linear layers in each column MLP (code: 4; paper: 2).
        hidden_multiplier: hidden width of the column MLPs in units of ``d``.
        return_iterations: return every iteration.
        epsilon: LayerNorm epsilon of the column MLPs.
    """

    def __init__(
        self,
        levels: int = 2,
        iterations: int | None = None,
        grid_shape: Sequence[int] | None = None,
        agreement_thresholds: Sequence[float | Sequence[float]] | None = None,
        agreement_radius: float = 3,
        normalize_negatives: bool = True,
        attention_radius: float = 0,
        attend_self: bool = False,
        use_agreement: bool = True,
        fusion_init: float = 0.2,
        top_down_weight: float = CODE_TOP_DOWN_WEIGHT,
        trainable_top_down_weight: bool = False,
        divide_by_contributions: bool = True,
        column_depth: int = 4,
        hidden_multiplier: int = 1,
        return_iterations: bool = False,
        epsilon: float = 1e-5,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.levels = errors.check_positive_int(self, "levels", levels)
        self.iterations = (
            2 * self.levels if iterations is None else errors.check_positive_int(self, "iterations", iterations)
        )
        self.grid_shape = None if grid_shape is None else tuple(int(g) for g in grid_shape)
        self.agreement_thresholds = self._check_thresholds(agreement_thresholds)
        self.agreement_radius = agreement_radius
        self.normalize_negatives = bool(normalize_negatives)
        self.attention_radius = attention_radius
        self.attend_self = bool(attend_self)
        self.use_agreement = bool(use_agreement)
        self.fusion_init = float(fusion_init)
        self.top_down_weight = float(top_down_weight)
        self.trainable_top_down_weight = bool(trainable_top_down_weight)
        self.divide_by_contributions = bool(divide_by_contributions)
        self.column_depth = errors.check_positive_int(self, "column_depth", column_depth)
        self.hidden_multiplier = errors.check_positive_int(self, "hidden_multiplier", hidden_multiplier)
        self.return_iterations = bool(return_iterations)
        self.epsilon = float(epsilon)

        up = [t[0] for t in self.agreement_thresholds]
        down = [t[1] for t in self.agreement_thresholds]
        common = dict(
            depth=self.column_depth,
            hidden_multiplier=self.hidden_multiplier,
            epsilon=self.epsilon,
            dtype=self.dtype_policy,
        )
        self.bottom_up = ColumnMLP(self.levels, activation="gelu", name="bottom_up", **common)
        self.top_down = (
            ColumnMLP(self.levels - 1, activation="sin", name="top_down", **common) if self.levels > 1 else None
        )
        self.attention = ConsensusAttention(
            attend_self=self.attend_self,
            radius=attention_radius,
            grid_shape=self.grid_shape,
            name="attention",
            dtype=self.dtype_policy,
        )
        self.agreement = None
        if self.use_agreement:
            self.agreement = ContrastiveAgreement(
                up_threshold=up,
                down_threshold=down,
                radius=agreement_radius,
                grid_shape=self.grid_shape,
                attend_self=self.attend_self,
                normalize_negatives=self.normalize_negatives,
                name="agreement",
                dtype=self.dtype_policy,
            )
            self.agreement_radius = self.agreement.radius  # checked there, a Python number (JSON configs)
        self.attention_radius = self.attention.radius

    def _check_thresholds(self, thresholds):
        if thresholds is None:
            thresholds = default_agreement_thresholds(self.levels)
        if not isinstance(thresholds, (list, tuple)) or len(thresholds) != self.levels:
            errors.fail(
                self, "agreement_thresholds", f"None or a list of {self.levels} thresholds (one per level)", thresholds
            )
        pairs = []
        for t in thresholds:
            if errors.is_number(t):
                pairs.append((float(t), float(t)))
            elif isinstance(t, (list, tuple)) and len(t) == 2 and all(errors.is_number(v) for v in t):
                pairs.append((float(t[0]), float(t[1])))
            else:
                errors.fail(self, "agreement_thresholds", "floats or [up, down] pairs, one per level", thresholds)
        return pairs

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 3, "(batch, N, d) tokens")
        _, num, dim = input_shape
        if num is None or dim is None:
            errors.fail(self, "inputs", "tokens with known N and d", f"shape {tuple(input_shape)}")
        self.initial_levels = self.add_weight(
            name="initial_levels", shape=(self.levels, dim), initializer=keras.initializers.RandomNormal(stddev=1.0)
        )

        def scalar(name, value, trainable=True):
            return self.add_weight(
                name=name, shape=(), initializer=keras.initializers.Constant(value), trainable=trainable
            )

        self.w_level = scalar("w_level", self.fusion_init)
        self.w_bottom_up = scalar("w_bottom_up", self.fusion_init)
        self.w_top_down = scalar("w_top_down", self.top_down_weight) if self.trainable_top_down_weight else None
        self.w_attention = scalar("w_attention", self.fusion_init)
        self.w_agreement = scalar("w_agreement", self.fusion_init) if self.use_agreement else None

        levels_shape = (None, num, self.levels, dim)
        self.bottom_up.build(levels_shape)
        if self.top_down is not None:
            self.top_down.build((None, num, self.levels - 1, dim))
        self.attention.build(levels_shape)
        if self.agreement is not None:
            self.agreement.build(levels_shape)

        terms = 4 + int(self.use_agreement)
        counts = np.full((self.levels,), float(terms), dtype="float32")
        counts[-1] -= 1.0  # the top level has no top-down contribution
        self._contributions = counts[None, None, :, None] if self.divide_by_contributions else None

    def _outputs(self, return_agreement, return_iterations):
        """The call arguments checked: ``(return_agreement, return_iterations)`` as booleans."""
        if return_agreement and self.agreement is None:
            errors.fail(
                self, "return_agreement", "False when use_agreement=False (there is no CAE output)", return_agreement
            )
        return bool(return_agreement), self.return_iterations if return_iterations is None else bool(return_iterations)

    def call(self, inputs, return_agreement=False, return_iterations=None):
        return_agreement, return_iterations = self._outputs(return_agreement, return_iterations)
        tokens = as_float(self, inputs)
        batch, num = ops.shape(tokens)[0], tokens.shape[1]
        levels = ops.broadcast_to(
            ops.cast(self.initial_levels, tokens.dtype), (batch, num, self.levels, tokens.shape[2])
        )
        bottom = ops.expand_dims(tokens, 2)
        w_top_down = self.top_down_weight if self.w_top_down is None else self.w_top_down
        history = [levels]
        agreement = None
        for _ in range(self.iterations):
            below = ops.concatenate([bottom, levels[:, :, :-1]], axis=2)
            total = self.w_level * levels + self.w_bottom_up * self.bottom_up(below)
            if self.top_down is not None:
                top_down = self.top_down(levels[:, :, 1:])
                top_down = ops.concatenate([top_down, ops.zeros_like(levels[:, :, :1])], axis=2)
                total = total + w_top_down * top_down
            total = total + self.w_attention * self.attention(levels)
            if self.agreement is not None:
                agreement = self.agreement(levels)
                total = total + self.w_agreement * agreement
            levels = total / ops.cast(self._contributions, total.dtype) if self._contributions is not None else total
            history.append(levels)
        out = ops.stack(history, axis=1) if return_iterations else levels
        return (out, agreement) if return_agreement else out

    def compute_output_shape(self, input_shape, return_iterations=None):
        batch, num, dim = input_shape
        levels = (batch, num, self.levels, dim)
        iterations = self.return_iterations if return_iterations is None else bool(return_iterations)
        return (batch, self.iterations + 1) + levels[1:] if iterations else levels

    def compute_output_spec(self, inputs, return_agreement=False, return_iterations=None):
        """Shapes without tracing the iterations (the PyTorch backend would run them on two made-up batches)."""
        return_agreement, return_iterations = self._outputs(return_agreement, return_iterations)
        dtype = inputs.dtype if keras.backend.is_float_dtype(inputs.dtype) else self.compute_dtype
        shape = self.compute_output_shape(inputs.shape, return_iterations)
        out = keras.KerasTensor(shape, dtype=dtype)
        agreement = keras.KerasTensor(self.compute_output_shape(inputs.shape, False), dtype=dtype)
        return (out, agreement) if return_agreement else out

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "levels": self.levels,
                "iterations": self.iterations,
                "grid_shape": self.grid_shape,
                "agreement_thresholds": [list(t) for t in self.agreement_thresholds],
                "agreement_radius": self.agreement_radius,
                "normalize_negatives": self.normalize_negatives,
                "attention_radius": self.attention_radius,
                "attend_self": self.attend_self,
                "use_agreement": self.use_agreement,
                "fusion_init": self.fusion_init,
                "top_down_weight": self.top_down_weight,
                "trainable_top_down_weight": self.trainable_top_down_weight,
                "divide_by_contributions": self.divide_by_contributions,
                "column_depth": self.column_depth,
                "hidden_multiplier": self.hidden_multiplier,
                "return_iterations": self.return_iterations,
                "epsilon": self.epsilon,
            }
        )
        return config


@register
class SelectLevel(keras.layers.Layer):
    """Picks one level of the GLOM columns.

    Input: ``(batch, N, levels, d)``. Output: ``(batch, N, d)``.

    Args:
        level: level index (negative counts from the top; -1 is the top level).
    """

    def __init__(self, level: int = -1, **kwargs) -> None:
        super().__init__(**kwargs)
        if not errors.is_integer(level):
            errors.fail(self, "level", "an integer level index", level, TypeError)
        self.level = int(level)

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 4, "(batch, N, levels, d)")
        levels = input_shape[2]
        if levels is not None and not -levels <= self.level < levels:
            errors.fail(self, "level", f"an index into {levels} levels", self.level)

    def call(self, inputs):
        return ops.take(inputs, self.level % inputs.shape[2], axis=2)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[1], input_shape[3])

    def get_config(self):
        config = super().get_config()
        config["level"] = self.level
        return config
