"""GLOM test helper: per-patch LayerNorm offsets as training leaves them, so a test checks a well-conditioned network."""

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
