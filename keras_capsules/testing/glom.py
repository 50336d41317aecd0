"""GLOM test helpers: NumPy references of the paper's equations (written independently of the layers) and
per-patch LayerNorm offsets as training leaves them, so a test checks a well-conditioned network."""

import keras
import numpy as np


def with_trained_offsets(model, seed=1):
    """Draws the GLOM column MLPs' per-patch LayerNorm offsets from N(0, 0.1), as training moves them.

    At initialisation every offset is 0 and the network is ill-conditioned from the second column
    iteration: after the first one, every column holds the same levels >= 1 (up to ~1e-8 of
    rounding), and each LayerNorm over the patch axis multiplies that residue by 1/sqrt(1e-5) ~ 316,
    so results that round differently (another runtime, or on a GPU another batch size) disagree by
    up to 1e-2. Per-patch offsets (any trained network) make the columns differ and the function
    well-conditioned.

    Args:
        model: a built GLOM model or ``GlomColumns`` layer (anything whose ``weights`` hold the
            column MLPs' ``norm_<i>_beta`` variables).
        seed: NumPy seed of the draw.

    Returns:
        ``model``, with the offsets assigned in place.
    """
    rng = np.random.default_rng(seed)
    offsets = [w for w in model.weights if "/norm_" in w.path and w.path.endswith("_beta")]
    assert offsets, "no column-MLP LayerNorm offsets found"
    for weight in offsets:
        weight.assign(rng.normal(0.0, 0.1, weight.shape).astype("float32"))
    return model


def _float64(x):
    return np.asarray(keras.ops.convert_to_numpy(x), dtype="float64")


def _unit(x):
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-6)


def _distances(h, w):
    pos = np.array([(r, c) for r in range(h) for c in range(w)], dtype="float64")
    return np.sqrt(((pos[:, None] - pos[None]) ** 2).sum(-1))


def np_cae(f, up, down, radius=0, grid=None, attend_self=False, divide_by_n=True):
    """Eqs. 2-7 for one level, ``f`` (N, d), with the code's diagonal, radius and 1/N conventions."""
    n = f.shape[0]
    s = _unit(f) @ _unit(f).T  # eq. 2
    if not attend_self:
        s[np.arange(n), np.arange(n)] = 5e-4
    s_e = np.where(s < down, s, 0.0)  # eqs. 3-4
    allowed = np.ones((n, n), bool) if radius == 0 else _distances(*grid) <= radius
    s_e = np.where(allowed, s_e, 1e-10)
    out = np.zeros_like(f)
    for i in range(n):  # eq. 5: softmax over the positives only
        pos = allowed[i] & (s[i] >= up)
        if pos.any():
            e = np.exp(s[i, pos] - s[i, pos].max())
            out[i] = (e / e.sum()) @ f[pos]
        else:
            out[i] = f.mean(0)
    neg = s_e @ f  # eq. 6
    return out - (neg / n if divide_by_n else neg)  # eq. 7


def np_self_attention(f, attend_self=False, radius=0, grid=None):
    """Eq. 1 with the code's normalised keys and 5e-4 self-logit, ``f`` (N, d); only columns within ``radius``."""
    logits = f @ _unit(f).T / np.sqrt(f.shape[1])
    if not attend_self:
        np.fill_diagonal(logits, 5e-4)
    if radius:
        logits = np.where(_distances(*grid) <= radius, logits, -np.inf)
    a = np.exp(logits - logits.max(1, keepdims=True))
    return (a / a.sum(1, keepdims=True)) @ f


def np_dissimilarity(grid, p):
    """Eqs. 9-10 on an ``(h, w, d)`` grid with ``p x p`` windows -> ``(h/p, w/p, d)``."""
    h, w, d = grid.shape
    out = np.zeros((h // p, w // p, d))
    for r in range(h // p):
        for c in range(w // p):
            f = grid[r * p : (r + 1) * p, c * p : (c + 1) * p].reshape(-1, d)
            weights = np.exp(1.0 - _unit(f) @ _unit(f).T).sum(1)  # eq. 9
            out[r, c] = (weights / weights.max()) @ f  # eq. 10, normalised by the max, not the sum
    return out


def np_column_mlp(x, layer, activation):
    """LayerNorm over the patch axis, then a per-group Linear, ``x`` (B, N, G, d)."""
    for i in range(layer.depth):
        mean = x.mean(1, keepdims=True)
        var = x.var(1, keepdims=True)
        gamma, beta = _float64(layer.norm_scales[i]), _float64(layer.norm_offsets[i])
        x = (x - mean) / np.sqrt(var + 1e-5) * gamma[None, :, None, None] + beta[None, :, None, None]
        kernel, bias = _float64(layer.kernels[i]), _float64(layer.biases[i])
        x = np.stack([x[:, :, g] @ kernel[g] + bias[g] for g in range(kernel.shape[0])], axis=2)
        if i < layer.depth - 1:
            x = activation(x)
    return x
