"""The uniform quantiser ``q_K`` of REM (Renzulli et al., docs/reference/rem.md#quantiser)."""

from keras import ops

from keras_capsules import errors


def quantize_uniform(x, levels=11):
    """Snap values in [0, 1] to the nearest of ``levels`` equally spaced centres ``k/(levels-1)``.

    With ``levels = K`` the bin edges are ``linspace(-0.5/(K-1), 1 + 0.5/(K-1), K+1)``, so ``K = 11``
    gives edges -0.05, 0.05, ..., 1.05 and centres 0, 0.1, ..., 1.0, exactly REM's quantiser. Values
    outside [0, 1] are clamped to the end centres. The gradient is the straight-through identity.

    Args:
        x: tensor (or NumPy array) of coupling coefficients, any shape.
        levels: ``K >= 2``.

    Returns:
        Quantised tensor, same shape and dtype as ``x``.
    """
    if not errors.is_integer(levels) or levels < 2:
        raise ValueError(f"quantize_uniform: argument `levels` expected an integer >= 2, received {levels!r}.")
    x = ops.convert_to_tensor(x)  # a NumPy ``x`` cannot meet a torch tensor in ``+``
    steps = float(int(levels) - 1)
    snapped = ops.clip(ops.floor(x * steps + 0.5), 0.0, steps) / steps
    return x + ops.stop_gradient(snapped - x)


def quantize_bins(x, levels=11):
    """Bin index of each value under :func:`quantize_uniform` (``0 .. levels-1``), as int32."""
    steps = float(levels - 1)
    return ops.cast(ops.clip(ops.floor(x * steps + 0.5), 0.0, steps), "int32")
