"""SupervisedContrastiveLoss against a NumPy implementation of Khosla et al.'s eq. (the paper's eq. 11)."""

import keras
import numpy as np
import pytest

from keras_capsules.losses import SupervisedContrastiveLoss
from keras_capsules.testing import input_gradient


def np_supcon(z, labels, tau=0.07):
    """Mean over anchors of -1/|P(i)| sum_p log(exp(z_i.z_p/tau) / sum_{a != i} exp(z_i.z_a/tau))."""
    n = len(z)
    losses = []
    for i in range(n):
        others = [a for a in range(n) if a != i]
        positives = [p for p in others if labels[p] == labels[i]]
        if not positives:
            continue
        denom = np.log(np.sum(np.exp([z[i] @ z[a] / tau for a in others])))
        losses.append(-np.mean([z[i] @ z[p] / tau - denom for p in positives]))
    return np.mean(losses)


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_matches_numpy_in_both_layouts():
    rng = np.random.default_rng(0)
    views = _unit(rng.normal(size=(6, 2, 8))).astype("float32")  # (batch, views, dim)
    labels = np.array([0, 1, 0, 2, 1, 1])
    stacked = np.concatenate([views[:, 0], views[:, 1]])  # what fit sees: concatenated views
    expected = np_supcon(stacked.astype("float64"), np.concatenate([labels, labels]))
    loss = SupervisedContrastiveLoss()
    np.testing.assert_allclose(float(loss(labels, views)), expected, rtol=1e-4)
    np.testing.assert_allclose(float(loss(np.concatenate([labels, labels]), stacked)), expected, rtol=1e-4)
    raw = stacked * 3.0
    np.testing.assert_allclose(
        float(SupervisedContrastiveLoss(normalize=True)(np.concatenate([labels, labels]), raw)), expected, rtol=1e-4
    )
    half = SupervisedContrastiveLoss(temperature=0.07, base_temperature=0.14)
    np.testing.assert_allclose(float(half(labels, views)), 0.5 * expected, rtol=1e-4)


def test_anchor_without_positives_and_gradients_are_finite():
    z = _unit(np.random.default_rng(1).normal(size=(4, 5))).astype("float32")
    labels = np.array([0, 1, 1, 2])  # anchors 0 and 3 have no positive: they contribute 0
    per_anchor = keras.ops.convert_to_numpy(SupervisedContrastiveLoss().call(keras.ops.convert_to_tensor(labels), z))
    assert per_anchor[0] == 0 and per_anchor[3] == 0 and np.all(np.isfinite(per_anchor))
    grad = input_gradient(lambda x: SupervisedContrastiveLoss()(labels, x), z)
    assert np.all(np.isfinite(grad)) and np.abs(grad).sum() > 0
    zeros = np.zeros((3, 4), "float32")
    assert np.isfinite(float(SupervisedContrastiveLoss(normalize=True)(np.array([0, 0, 1]), zeros)))


def test_config_and_errors():
    loss = SupervisedContrastiveLoss(temperature=0.1, base_temperature=0.07, normalize=True)
    revived = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(loss))
    assert (revived.temperature, revived.base_temperature, revived.normalize) == (0.1, 0.07, True)
    with pytest.raises(ValueError, match="SupervisedContrastiveLoss.*temperature"):
        SupervisedContrastiveLoss(temperature=0)
    with pytest.raises(ValueError, match="SupervisedContrastiveLoss.*y_pred"):
        SupervisedContrastiveLoss()(np.zeros(2), np.zeros((2, 2, 2, 2), "float32"))
