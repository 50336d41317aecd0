"""TV_n (eq. 13) and the code's total-variation variant against NumPy written from the definitions."""

import keras
import numpy as np
import pytest

from keras_capsules import metrics


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def np_tv_n(f):
    """Eq. 13 for one example and level, ``f`` (N, d)."""
    n, d = f.shape
    fp = _unit(f)
    mu = fp.sum(0) / n
    return ((fp - mu) ** 2).sum() / (n * d)


def np_tv_code(f, h, w):
    """torchmetrics.total_variation (sum of absolute neighbour differences) on normalised ``f`` / (N d)."""
    img = _unit(f).reshape(h, w, -1)
    return (np.abs(np.diff(img, axis=0)).sum() + np.abs(np.diff(img, axis=1)).sum()) / (h * w * f.shape[-1])


def test_tv_n_and_code_variant_match_numpy():
    f = np.random.default_rng(0).normal(size=(3, 12, 2, 5)).astype("float32")
    paper = keras.ops.convert_to_numpy(metrics.tv_n(f))
    code = keras.ops.convert_to_numpy(metrics.tv_n_code(f, grid_shape=(3, 4)))
    assert paper.shape == code.shape == (3, 2)
    for b in range(3):
        for k in range(2):
            np.testing.assert_allclose(paper[b, k], np_tv_n(f[b, :, k].astype("float64")), rtol=1e-5)
            np.testing.assert_allclose(code[b, k], np_tv_code(f[b, :, k].astype("float64"), 3, 4), rtol=1e-5)
    one = keras.ops.convert_to_numpy(metrics.tv_n(f[:, :, 0]))
    np.testing.assert_allclose(one, paper[:, 0], rtol=1e-6)
    same = np.ones((1, 16, 4), "float32") * np.arange(1, 5, dtype="float32")
    assert float(metrics.tv_n(same)[0]) < 1e-7 and float(metrics.tv_n_code(same)[0]) < 1e-7  # one island: 0
    with pytest.raises(ValueError, match="tv_n_code.*grid_shape"):
        metrics.tv_n_code(f[:, :10])


def test_tvn_metric_accumulates_and_serialises():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 16, 3, 4)).astype("float32"), rng.normal(size=(4, 16, 3, 4)).astype("float32")
    metric = metrics.TVn(level=0)
    metric.update_state(a)
    metric.update_state(None, b)  # (y_true, y_pred) form, as in compile(metrics=...)
    expected = np.concatenate([keras.ops.convert_to_numpy(metrics.tv_n(x[:, :, 0])) for x in (a, b)]).mean()
    np.testing.assert_allclose(float(metric.result()), expected, rtol=1e-5)
    metric.reset_state()
    assert float(metric.result()) == 0.0
    code = metrics.TVn(level=-1, variant="code", grid_shape=(4, 4), name="tv_top")
    code.update_state(a)
    np.testing.assert_allclose(
        float(code.result()), np.mean([np_tv_code(x[:, 2].astype("float64"), 4, 4) for x in a]), rtol=1e-5
    )
    revived = metrics.TVn.from_config(code.get_config())
    assert (revived.level, revived.variant, revived.grid_shape, revived.name) == (-1, "code", (4, 4), "tv_top")
    assert keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(code)).variant == "code"
    with pytest.raises(ValueError, match="TVn.*variant"):
        metrics.TVn(variant="total")
