"""ContrastiveAgreement (GLOM's eqs. 2-7) against a NumPy implementation written independently of the layer."""

import keras
import numpy as np
import pytest

from keras_capsules.layers import glom
from keras_capsules.testing import run_layer_test
from keras_capsules.testing.glom import np_cae


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x), dtype="float64")


def test_contrastive_agreement_matches_numpy_equations():
    rng = np.random.default_rng(0)
    f = rng.normal(size=(2, 20, 3, 6)).astype("float32")  # a 4x5 grid, 3 levels
    ups, downs = [0.0, -0.1, -0.2], [0.1, -0.1, -0.3]
    cases = [
        dict(radius=0, attend_self=False, normalize_negatives=True),
        dict(radius=1.5, attend_self=False, normalize_negatives=False),
        dict(radius=3, attend_self=True, normalize_negatives=True),
    ]
    for case in cases:
        layer = glom.ContrastiveAgreement(up_threshold=ups, down_threshold=downs, grid_shape=(4, 5), **case)
        got = _np(layer(f))
        for b in range(2):
            for k in range(3):
                want = np_cae(
                    f[b, :, k].astype("float64"),
                    ups[k],
                    downs[k],
                    case["radius"],
                    (4, 5),
                    case["attend_self"],
                    case["normalize_negatives"],
                )
                np.testing.assert_allclose(got[b, :, k], want, rtol=1e-4, atol=1e-5, err_msg=str(case))
    # A single level given as (batch, N, d); up above every similarity -> no positives -> uniform, finite.
    single = _np(glom.ContrastiveAgreement(up_threshold=2.0, radius=0)(f[:, :, 0]))
    np.testing.assert_allclose(single[0], np_cae(f[0, :, 0].astype("float64"), 2.0, 2.0), rtol=1e-4, atol=1e-5)


def test_layer_contract():
    levels = np.random.default_rng(9).normal(size=(3, 16, 2, 8)).astype("float32")
    run_layer_test(glom.ContrastiveAgreement, {"up_threshold": [0.0, -0.2]}, levels, [(3, 16, 2, 8)], run_export=False)


def test_argument_errors_name_layer_and_argument():
    with pytest.raises(ValueError, match=r"ContrastiveAgreement.*radius"):
        glom.ContrastiveAgreement(radius=-1)
    with pytest.raises(ValueError, match=r"ContrastiveAgreement.*up_threshold.*3 values"):
        glom.ContrastiveAgreement(up_threshold=[0.0, -0.2])(np.zeros((1, 4, 3, 2), "float32"))
    with pytest.raises(ValueError, match=r"ContrastiveAgreement.*grid_shape"):
        glom.ContrastiveAgreement(radius=2)(np.zeros((1, 6, 2), "float32"))
