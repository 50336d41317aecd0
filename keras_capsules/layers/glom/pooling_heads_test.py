"""Window average and max pooling heads, and the window checks every window head shares, against NumPy."""

import keras
import numpy as np
import pytest

from keras_capsules.layers import glom
from keras_capsules.testing import run_layer_test


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x), dtype="float64")


def test_window_heads_errors_and_pooling():
    tokens = np.random.default_rng(3).normal(size=(2, 49, 4)).astype("float32")
    for cls in (glom.DissimilarityHead, glom.WindowAveragePooling, glom.WindowMaxPooling):
        with pytest.raises(ValueError, match=r"window=4.*7x7 grid"):
            cls(window=4)(tokens)
    with pytest.raises(ValueError, match="grid_shape"):
        glom.DissimilarityHead(window=2)(tokens[:, :48])  # 48 columns are not a square grid
    grid = tokens[:, :36].reshape(2, 6, 6, 4)
    avg = _np(glom.WindowAveragePooling(window=3)(grid))
    mx = _np(glom.WindowMaxPooling(window=3)(tokens[:, :36]))
    np.testing.assert_allclose(avg[0, 1, 0], grid[0, 3:6, 0:3].reshape(-1, 4).mean(0), rtol=1e-5)
    np.testing.assert_allclose(mx[0, 2], grid[0, 3:6, 0:3].reshape(-1, 4).max(0), rtol=1e-6)


def test_layer_contracts():
    tokens = np.random.default_rng(9).normal(size=(3, 16, 8)).astype("float32")
    run_layer_test(glom.WindowMaxPooling, {"window": 4}, tokens, [(3, 1, 8)], run_saving=False, run_export=False)
    run_layer_test(glom.WindowAveragePooling, {"window": 2}, tokens, [(3, 4, 8)], run_saving=False, run_export=False)
