"""DissimilarityHead (GLOM's eqs. 9-10) against a NumPy implementation written independently of the layer."""

import keras
import numpy as np

from keras_capsules.layers import glom
from keras_capsules.testing import run_layer_test
from keras_capsules.testing.glom import np_dissimilarity


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x), dtype="float64")


def test_dissimilarity_head_matches_numpy_equations():
    grid = np.random.default_rng(2).normal(size=(2, 4, 6, 5)).astype("float32")
    tokens = grid.reshape(2, 24, 5)
    head = glom.DissimilarityHead(window=2, grid_shape=(4, 6))
    got = _np(head(tokens))
    assert got.shape == (2, 6, 5)
    for b in range(2):
        np.testing.assert_allclose(
            got[b], np_dissimilarity(grid[b].astype("float64"), 2).reshape(6, 5), rtol=1e-4, atol=1e-5
        )
    np.testing.assert_allclose(_np(glom.DissimilarityHead(window=2)(grid)), got.reshape(2, 2, 3, 5), rtol=1e-6)
    weights = _np(head.window_weights(tokens))
    assert weights.shape == (2, 6, 4) and np.allclose(weights.max(-1), 1.0)
    # Identical embeddings in a window: all weights e^0 * m / max = 1, output = m * f.
    same = np.ones((1, 16, 3), "float32")
    np.testing.assert_allclose(_np(glom.DissimilarityHead(window=4)(same)), 16 * np.ones((1, 1, 3)), rtol=1e-6)


def test_layer_contract():
    tokens = np.random.default_rng(9).normal(size=(3, 16, 8)).astype("float32")
    run_layer_test(glom.DissimilarityHead, {"window": 2}, tokens, [(3, 4, 8)], run_export=False)
