import keras
import numpy as np
import pytest

from keras_capsules.ops.softmax import softmax_along
from keras_capsules.testing import input_gradient


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2])
def test_matches_numpy(axis):
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32") * 30
    got = keras.ops.convert_to_numpy(softmax_along(keras.ops.convert_to_tensor(x), axis))
    np.testing.assert_allclose(got, np_softmax(x.astype("float64"), axis), rtol=1e-5, atol=1e-7)


def test_takes_numpy_arrays():
    # On PyTorch a NumPy array cannot meet a torch tensor in ``-`` (it raised TypeError before softmax_along
    # converted its input).
    x = np.random.default_rng(3).normal(size=(2, 3, 4)).astype("float32")
    for axis in (1, -1):
        got = keras.ops.convert_to_numpy(softmax_along(x, axis))
        np.testing.assert_allclose(got, np_softmax(x.astype("float64"), axis), rtol=1e-5, atol=1e-7)


def test_gradient_is_the_softmax_jacobian():
    """d(sum_k w_k s_k)/dx_j = s_j (w_j - sum_k w_k s_k) along the axis (hand-derived)."""
    x = np.random.default_rng(1).normal(size=(2, 5, 3)).astype("float32")
    w = np.random.default_rng(2).normal(size=(2, 5, 3)).astype("float32")
    # w as a tensor: PyTorch cannot multiply a tensor that requires grad by a NumPy array.
    grad = input_gradient(lambda t: softmax_along(t, 1) * keras.ops.convert_to_tensor(w), x)
    s = np_softmax(x.astype("float64"), 1)
    expected = s * (w - (w * s).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(grad, expected, rtol=1e-4, atol=1e-6)


def test_large_logits_stay_finite():
    x = np.array([[[1e30, 0.0], [-1e30, 3.0]]], dtype="float32")
    got = keras.ops.convert_to_numpy(softmax_along(keras.ops.convert_to_tensor(x), 1))
    np.testing.assert_allclose(got, [[[1.0, 0.04742587], [0.0, 0.95257413]]], rtol=1e-5)


def test_empty_batch():
    out = softmax_along(keras.ops.zeros((0, 3, 4)), 1)
    assert tuple(out.shape) == (0, 3, 4)
