import numpy as np
import pytest
from keras import ops

from keras_capsules.ops import capsule_length, quantize_bins, quantize_uniform, safe_norm, squash, squash_efficient
from keras_capsules.testing import input_gradient


def np_squash(s):
    n = np.linalg.norm(s, axis=-1, keepdims=True)
    return (n**2 / (1 + n**2)) * s / n


def np_squash_eff(s):
    n = np.linalg.norm(s, axis=-1, keepdims=True)
    return (1 - np.exp(-n)) * s / n


def test_squash_matches_equations():
    s = np.random.default_rng(0).normal(size=(4, 5, 8)).astype("float32") * 3
    np.testing.assert_allclose(ops.convert_to_numpy(squash(s)), np_squash(s), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ops.convert_to_numpy(squash_efficient(s)), np_squash_eff(s), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ops.convert_to_numpy(squash(s, form="escvm")), np_squash(s), rtol=1e-5, atol=1e-6)


def test_squash_hand_computed_and_bounded():
    # |s| = 5 (3-4-5 triangle): length 25/26, direction kept.
    out = ops.convert_to_numpy(squash(np.array([[3.0, 4.0]], "float32")))
    np.testing.assert_allclose(out, [[3 / 5 * 25 / 26, 4 / 5 * 25 / 26]], rtol=1e-6)
    big = np.full((2, 16), 1e4, "float32")
    for fn in (squash, squash_efficient):
        lengths = np.linalg.norm(ops.convert_to_numpy(fn(big)), axis=-1)
        assert np.all(lengths <= 1.0 + 1e-6) and np.all(np.isfinite(lengths))


@pytest.mark.parametrize(
    "fn",
    [squash, lambda x: squash(x, form="escvm"), squash_efficient, lambda x: safe_norm(x), lambda x: capsule_length(x)],
)
def test_zero_vectors_give_finite_values_and_gradients(fn):
    zeros = np.zeros((3, 8), "float32")
    assert np.all(np.isfinite(ops.convert_to_numpy(fn(zeros))))
    assert np.all(np.isfinite(input_gradient(fn, zeros)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_squash_low_precision_is_finite(dtype):
    s = ops.cast(np.array([[0.0] * 8, [200.0] * 8, [1e-3] * 8], "float32"), dtype)
    for fn in (squash, squash_efficient):
        out = ops.convert_to_numpy(ops.cast(fn(s), "float32"))
        assert np.all(np.isfinite(out))


def test_official_form_is_nan_at_zero_like_the_reference():
    out = ops.convert_to_numpy(squash(np.zeros((1, 4), "float32"), form="official"))
    assert np.all(np.isnan(out))


def test_unknown_form_is_rejected():
    with pytest.raises(ValueError, match="form"):
        squash(np.ones((1, 4), "float32"), form="nope")


def test_quantiser_matches_rem_bins():
    # REM, K = 11: edges linspace(-0.05, 1.05, 12), centres 0, 0.1, ..., 1.0 (np.digitize, right=False).
    x = np.array([0.0, 0.04, 0.051, 0.149, 0.151, 0.5, 0.97, 1.0, -0.2, 1.3], "float32")
    edges = np.linspace(-0.05, 1.05, 12)
    expected_bins = np.clip(np.digitize(x, edges), 1, 11) - 1
    np.testing.assert_array_equal(ops.convert_to_numpy(quantize_bins(x, 11)), expected_bins)
    np.testing.assert_allclose(ops.convert_to_numpy(quantize_uniform(x, 11)), expected_bins / 10, atol=1e-6)
    np.testing.assert_allclose(ops.convert_to_numpy(quantize_uniform(np.array([0.3, 0.8], "float32"), 2)), [0.0, 1.0])
    with pytest.raises(ValueError, match="levels"):
        quantize_uniform(x, 1)


@pytest.mark.parametrize(
    "dtype,magnitude", [("float32", 1e20), ("float32", 1e37), ("float16", 6e4), ("bfloat16", 3e38)]
)
def test_squash_of_huge_vectors_has_length_about_one(dtype, magnitude):
    # (3, 4) * magnitude has norm 5 * magnitude: the squashed vector is (0.6, 0.8) up to rounding.
    s = ops.cast(np.array([[0.3, 0.4]], "float32") * magnitude, dtype)
    for fn in (squash, squash_efficient, lambda x: squash(x, form="escvm")):
        out = ops.convert_to_numpy(ops.cast(fn(s), "float32"))
        np.testing.assert_allclose(out, [[0.6, 0.8]], rtol=1e-2 if dtype != "float32" else 1e-6)
    expected_norm = 0.5 * magnitude
    np.testing.assert_allclose(ops.convert_to_numpy(ops.cast(safe_norm(s), "float32")), [expected_norm], rtol=1e-2)


@pytest.mark.parametrize("scale", [1.0, 1e20])
def test_clip_magnitude_clips_values_and_passes_gradients_straight_through(scale):
    from keras_capsules.ops.norms import clip_magnitude

    x = np.array([[-3.0, 0.5, 2.0], [1e-3, -0.2, 4.0]], "float32") * scale
    limit = 2.5 * scale if scale == 1.0 else 1e15
    np.testing.assert_array_equal(
        ops.convert_to_numpy(clip_magnitude(ops.convert_to_tensor(x), limit)), np.clip(x, -limit, limit)
    )
    # The backward pass is the identity, clipped entries included (a plain clip's would be 0 there).
    np.testing.assert_array_equal(input_gradient(lambda v: clip_magnitude(v, limit), x), np.ones_like(x))


def test_limit_magnitude_scales_only_the_slices_beyond_the_limit():
    from keras_capsules.ops.norms import limit_magnitude

    x = np.array([[1.0, -2.0], [4e15, -1e15], [0.0, 3.0]], "float32")
    out = ops.convert_to_numpy(limit_magnitude(ops.convert_to_tensor(x), axis=-1, limit=1e15))
    np.testing.assert_array_equal(out[[0, 2]], x[[0, 2]])  # untouched, bit for bit
    np.testing.assert_allclose(out[1], [1e15, -0.25e15], rtol=1e-6)  # row 1 divided by its peak / limit = 4
    ordinary = np.array([[1.0, -2.0]], "float32")  # no slice beyond the limit: identity, gradient one
    np.testing.assert_array_equal(
        input_gradient(lambda v: limit_magnitude(v, limit=1e15), ordinary), np.ones_like(ordinary)
    )


def test_magnitude_guards_under_remat():
    import keras

    from keras_capsules.ops.norms import clip_magnitude, limit_magnitude

    x = np.array([[-3.0, 0.5], [1e16, 2.0]], "float32")

    def guarded(v):
        return clip_magnitude(v, 2.5) + limit_magnitude(v, limit=1e15)

    expected_value = np.clip(x, -2.5, 2.5) + np.array([[-3.0, 0.5], [1e15, 0.2]], "float32")
    np.testing.assert_allclose(
        ops.convert_to_numpy(keras.remat(guarded)(ops.convert_to_tensor(x))), expected_value, rtol=1e-6
    )
    # clip: straight through (1); limit_magnitude: 1 in the untouched row, 1/10 in the scaled one (factor gradient-free).
    expected_gradient = np.array([[1.0 + 1.0, 1.0 + 1.0], [1.0 + 0.1, 1.0 + 0.1]], "float32")
    np.testing.assert_allclose(input_gradient(keras.remat(guarded), x), expected_gradient, rtol=1e-6)
