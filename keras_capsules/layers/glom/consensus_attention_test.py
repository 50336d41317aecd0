"""ConsensusAttention (GLOM's eq. 1) against a NumPy implementation written independently of the layer."""

import json

import keras
import numpy as np
import pytest

from keras_capsules.layers import glom
from keras_capsules.testing import run_layer_test
from keras_capsules.testing.glom import np_self_attention


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x), dtype="float64")


def test_consensus_attention_matches_numpy_equation():
    f = np.random.default_rng(1).normal(size=(2, 9, 2, 4)).astype("float32")
    for attend_self in (False, True):
        got = _np(glom.ConsensusAttention(attend_self=attend_self)(f))
        for b in range(2):
            for k in range(2):
                want = np_self_attention(f[b, :, k].astype("float64"), attend_self)
                np.testing.assert_allclose(got[b, :, k], want, rtol=1e-4, atol=1e-5)
    local = _np(glom.ConsensusAttention(radius=1)(f[:, :, 0]))
    for b in range(2):
        np.testing.assert_allclose(
            local[b], np_self_attention(f[b, :, 0].astype("float64"), radius=1, grid=(3, 3)), rtol=1e-4, atol=1e-5
        )


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_consensus_attention_is_finite_near_the_largest_float(dtype):
    # (3.3e38, -3.3e38): its logit with itself, |f|^2 / (|f| sqrt(2)) = 3.3e38, is representable, but
    # the unscaled dot product 4.7e38 is not. Alone, a column attends only to itself: output = input.
    big = keras.ops.cast(np.array([[[3.3e38, -3.3e38]]], "float32"), dtype)
    out = _np(keras.ops.cast(glom.ConsensusAttention(attend_self=True, dtype=dtype)(big), "float32"))
    np.testing.assert_allclose(out, _np(keras.ops.cast(big, "float32")), rtol=1e-6)


def test_layer_contract():
    levels = np.random.default_rng(9).normal(size=(3, 16, 2, 8)).astype("float32")
    run_layer_test(glom.ConsensusAttention, {"radius": 2}, levels, [(3, 16, 2, 8)], run_export=False)


def test_numpy_numbers_are_accepted_for_radii_and_thresholds_and_stored_as_python_numbers():
    f = np.random.default_rng(2).normal(size=(1, 9, 4)).astype("float32")
    np.testing.assert_array_equal(
        _np(glom.ConsensusAttention(radius=np.int64(1))(f)), _np(glom.ConsensusAttention(radius=1)(f))
    )
    layers = [
        glom.ConsensusAttention(radius=np.uint8(2)),
        glom.ContrastiveAgreement(radius=np.int32(3), up_threshold=np.float32(0.5), down_threshold=[np.float64(0.1)]),
        glom.GlomColumns(levels=np.int64(2), agreement_radius=np.int16(1), attention_radius=np.int64(0)),
    ]
    configs = [json.loads(json.dumps(layer.get_config())) for layer in layers]  # NumPy scalars would not serialise
    assert configs[0]["radius"] == 2 and configs[1]["radius"] == 3 and configs[2]["levels"] == 2
    for radius in (True, -1):
        with pytest.raises(ValueError, match=r"ConsensusAttention.*`radius` expected a number >= 0"):
            glom.ConsensusAttention(radius=radius)
