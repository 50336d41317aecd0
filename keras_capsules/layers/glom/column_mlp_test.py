"""ColumnMLP (GLOM's per-level column networks) against a NumPy implementation written independently of the layer."""

import keras
import numpy as np
import pytest

from keras_capsules.layers import glom
from keras_capsules.testing import run_layer_test
from keras_capsules.testing.glom import np_column_mlp


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x), dtype="float64")


def test_column_mlp_layer_norm_over_patches_matches_numpy():
    x = np.random.default_rng(4).normal(size=(2, 6, 3, 5)).astype("float32")
    for activation, fn in (("gelu", None), ("sin", np.sin)):
        layer = glom.ColumnMLP(3, activation=activation)
        got = _np(layer(x))
        if fn is None:
            from math import erf

            fn = np.vectorize(lambda v: 0.5 * v * (1.0 + erf(v / np.sqrt(2.0))))
        np.testing.assert_allclose(got, np_column_mlp(x.astype("float64"), layer, fn), rtol=1e-4, atol=1e-5)
    wide = glom.ColumnMLP(3, depth=3, activation="sin", hidden_multiplier=2)  # layers of different widths
    np.testing.assert_allclose(_np(wide(x)), np_column_mlp(x.astype("float64"), wide, np.sin), rtol=1e-4, atol=1e-5)
    # 4 layers x (2N LayerNorm + per group d*d + d): the code's count for N = 64, d = 128, 2 groups.
    big = glom.ColumnMLP(2)
    big.build((None, 64, 2, 128))
    assert big.count_params() == 132_608


def test_layer_contract():
    levels = np.random.default_rng(9).normal(size=(3, 16, 2, 8)).astype("float32")
    run_layer_test(glom.ColumnMLP, {"groups": 2, "activation": "sin"}, levels, [(3, 16, 2, 8)], run_export=False)


def test_activation_errors_name_layer_and_argument():
    with pytest.raises(ValueError, match=r"ColumnMLP.*activation"):
        glom.ColumnMLP(2, activation="tanh")
