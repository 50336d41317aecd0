"""The index and normalisation helpers of ``ops`` (patches, grids, L2 normalisation, dtypes) against NumPy references."""

import keras
import numpy as np
import pytest

from keras_capsules.ops import LOW_PRECISION, dtype_max, l2_normalize, output_size, patch_indices, resolve_grid


def _reference_patches(height, width, kernel, stride, padding):
    """Receptive fields by explicit loops over a padded grid of flat indices (TensorFlow's SAME split)."""
    if padding == "valid":
        out_h, out_w, top, left, bottom, right = (
            (height - kernel) // stride + 1,
            (width - kernel) // stride + 1,
            0,
            0,
            0,
            0,
        )
    else:
        out_h, out_w = int(np.ceil(height / stride)), int(np.ceil(width / stride))
        pad_h = max((out_h - 1) * stride + kernel - height, 0)
        pad_w = max((out_w - 1) * stride + kernel - width, 0)
        top, left = pad_h // 2, pad_w // 2
        bottom, right = pad_h - top, pad_w - left
    grid = np.arange((height + top + bottom) * (width + left + right)).reshape(
        height + top + bottom, width + left + right
    )
    fields = [
        grid[r * stride : r * stride + kernel, c * stride : c * stride + kernel].ravel()
        for r in range(out_h)
        for c in range(out_w)
    ]
    return np.concatenate(fields), (top, bottom, left, right), width + left + right, (out_h, out_w)


@pytest.mark.parametrize(
    "height, width, kernel, stride, padding",
    [(7, 5, 3, 1, "valid"), (8, 8, 3, 2, "valid"), (7, 6, 3, 2, "same"), (5, 5, 4, 3, "same")],
)
def test_patch_indices_and_output_size_match_explicit_loops(height, width, kernel, stride, padding):
    expected, pads, padded_width, (out_h, out_w) = _reference_patches(height, width, kernel, stride, padding)
    indices, got_pads, got_width = patch_indices(height, width, kernel, stride, padding)
    np.testing.assert_array_equal(indices, expected)
    assert indices.dtype == np.int32 and got_pads == pads and got_width == padded_width
    assert (output_size(height, kernel, stride, padding), output_size(width, kernel, stride, padding)) == (out_h, out_w)


def test_resolve_grid():
    assert resolve_grid("f", "grid_shape", 64, None) == (8, 8)
    assert resolve_grid("f", "grid_shape", 12, (3, 4)) == (3, 4)
    with pytest.raises(ValueError, match=r"f: .*`grid_shape`.*10 patches are not a square"):
        resolve_grid("f", "grid_shape", 10, None)
    with pytest.raises(ValueError, match=r"f: .*`grid_shape`.*height \* width = 12"):
        resolve_grid("f", "grid_shape", 12, (3, 3))


def test_l2_normalize_matches_pytorch_normalize_semantics():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [rng.normal(size=(4, 5)) * 3.0, np.zeros((1, 5)), np.full((1, 5), 1e-8), rng.normal(size=(1, 5)) * 1e20]
    ).astype("float32")
    # F.normalize: x / max(||x||, 1e-6), in float64.
    norms = np.linalg.norm(x.astype("float64"), axis=-1, keepdims=True)
    expected = x / np.maximum(norms, 1e-6)
    got = keras.ops.convert_to_numpy(l2_normalize(x))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-12)
    assert np.all(got[4] == 0.0)  # zero vectors stay zero
    np.testing.assert_allclose(np.linalg.norm(got[6]), 1.0, rtol=1e-6)  # no overflow at 1e20
    # Another axis, and float16 computed in float32 and returned as float16.
    columns = keras.ops.convert_to_numpy(l2_normalize(x[:4].T, axis=0))
    np.testing.assert_allclose(columns, expected[:4].T, rtol=1e-6)
    half = l2_normalize(keras.ops.convert_to_tensor(x[:4] * 100.0, "float16"))
    assert keras.backend.standardize_dtype(half.dtype) == "float16"
    np.testing.assert_allclose(keras.ops.convert_to_numpy(half).astype("float32"), expected[:4], atol=2e-3)


def test_dtypes():
    assert LOW_PRECISION == ("float16", "bfloat16")
    assert dtype_max("float16") == 65504.0 and dtype_max("float32") == float(np.finfo("float32").max)
    assert dtype_max("bfloat16") == pytest.approx((2 - 2**-7) * 2.0**127)
