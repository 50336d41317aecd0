import numpy as np
import pytest

from keras_capsules.losses import MarginLoss, reconstruction_loss


def test_margin_loss_hand_computed():
    lengths = np.array([[0.95, 0.3, 0.05], [0.5, 0.5, 0.2]], "float32")
    # Example 1, class 0: present 0 (0.95 > 0.9); absent 0.5*(0.3-0.1)^2 = 0.02; 0.05 < 0.1 -> 0.
    # Example 2, class 2: present (0.9-0.2)^2 = 0.49; absent 0.5*(0.4^2 + 0.4^2) = 0.16.
    expected = np.mean([0.02, 0.49 + 0.16])
    np.testing.assert_allclose(float(MarginLoss()(np.array([0, 2]), lengths)), expected, rtol=1e-5)
    np.testing.assert_allclose(float(MarginLoss()(np.eye(3)[[0, 2]], lengths)), expected, rtol=1e-5)
    np.testing.assert_allclose(float(MarginLoss(scale=0.5)(np.array([0, 2]), lengths)), expected / 2, rtol=1e-5)


def test_reconstruction_loss_reductions():
    a = np.zeros((2, 2, 2, 1), "float32")
    b = np.ones((2, 2, 2, 1), "float32") * 0.5
    np.testing.assert_allclose(np.asarray(reconstruction_loss(a, b)), [1.0, 1.0])
    np.testing.assert_allclose(np.asarray(reconstruction_loss(a, b, "mean")), [0.25, 0.25])
    with pytest.raises(ValueError, match="pixel_reduction"):
        reconstruction_loss(a, b, "max")


@pytest.mark.parametrize("bad", [13, -1, 200, 1.5])
def test_margin_loss_rejects_labels_out_of_range(bad):
    lengths = np.full((2, 10), 0.5, "float32")
    with pytest.raises(ValueError, match=r"MarginLoss .*`y_true` expected class indices in \[0, 10\)"):
        MarginLoss()(np.array([0, bad]), lengths)


def test_margin_loss_rejects_labels_of_the_wrong_width_or_batch():
    lengths = np.full((4, 10), 0.5, "float32")
    with pytest.raises(
        ValueError,
        match=r"`y_true` expected class indices \(batch,\) or \(batch, 1\), or one-hot \(batch, 10\), received 'shape \(4, 5\)'",
    ):
        MarginLoss()(np.ones((4, 5)), lengths)
    with pytest.raises(ValueError, match=r"`y_true` expected 4 labels"):
        MarginLoss()(np.zeros((3,)), lengths)
    with pytest.raises(ValueError, match=r"one-/multi-hot labels with values in \[0, 1\]"):
        MarginLoss()(np.full((4, 10), 2.0), lengths)
