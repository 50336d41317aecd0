"""Dissimilarity-focused downsampling head ``H_d`` (Zeng et al., eqs. 9-10; docs/reference/glom.md#dissimilarity-head)."""

from keras import ops

from keras_capsules.layers.glom import _utils
from keras_capsules.layers.glom.window_head import WindowHead
from keras_capsules.ops.reductions import max_with_initial
from keras_capsules.serialization import register


@register
class DissimilarityHead(WindowHead):
    """``H_d``: each window becomes a weighted sum that favours the embeddings least like the others.

    Per ``p x p`` window with embeddings ``f_1..f_m`` (``m = p*p``): ``S'_ij = cos(f_i, f_j)``,
    ``W_i = sum_j exp(1 - S'_ij)`` (eq. 9), ``W <- W / max_i W_i``, output ``sum_i W_i f_i`` (eq. 10).
    As in the code the output is **not** divided by ``sum_i W_i``. On the code's 8x8 top level with
    ``window=4`` this gives 2x2 = 4 tokens. Computed in float32, returned in the input dtype.

    Input: ``(batch, h*w, d)`` (row-major) or ``(batch, h, w, d)``; ``h`` and ``w`` must be
    multiples of ``window`` (a clear error otherwise). Output: ``(batch, (h/p)*(w/p), d)`` or
    ``(batch, h/p, w/p, d)``.

    Args:
        window: window side and stride ``p`` (code: 4).
        grid_shape: ``(h, w)`` for token inputs; ``None`` means square.
    """

    def reduce(self, windows):
        values = ops.cast(windows, "float32")
        unit = _utils.l2_normalize(values)
        sim = ops.einsum("bpid,bpjd->bpij", unit, unit)
        weights = ops.sum(ops.exp(1.0 - sim), axis=-1)
        weights = weights / max_with_initial(weights, 0.0, axis=-1, keepdims=True)  # weights > 0; ``initial``: batch 0
        return ops.cast(ops.einsum("bpi,bpid->bpd", weights, values), windows.dtype)

    def window_weights(self, inputs):
        """The normalised weights ``W`` of eq. 9: ``(batch, P, p*p)`` (for inspection and plots)."""
        if not self.built:
            self.build(tuple(inputs.shape))
        h, w = self._grid_hw
        tokens = ops.reshape(inputs, (-1, h * w, inputs.shape[-1]))
        unit = _utils.l2_normalize(_utils.partition_windows(tokens, (h, w), self.window))
        weights = ops.sum(ops.exp(1.0 - ops.einsum("bpid,bpjd->bpij", unit, unit)), axis=-1)
        return weights / max_with_initial(weights, 0.0, axis=-1, keepdims=True)
