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


RNG = np.random.default_rng(5)
X = RNG.normal(size=(8, 4)).astype("float32")
Y = np.array([0, 1, 2, 0, 1, 2, 0, 1])
W = RNG.normal(size=(4, 3)).astype("float32")
B = RNG.normal(size=(3,)).astype("float32")


def _dense(activation, loss):
    """``activation(x W + b)``, compiled with ``loss``: ``evaluate`` computes it as ``fit`` does (traced on TF)."""
    import keras

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation)])
    model.layers[-1].set_weights([W, B])
    model.compile(loss=loss)
    return model


def _numpy_cross_entropy(logits):
    logits = logits.astype("float64")
    log_p = logits - logits.max(axis=1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(axis=1, keepdims=True))
    return -log_p[np.arange(len(Y)), Y].mean()


def test_scores_crossentropy_takes_sigmoid_outputs_as_the_logits_like_numpy():
    # Keras's SparseCategoricalCrossentropy(from_logits=True) would read x W + b here, on TensorFlow only.
    from keras_capsules.losses import ScoresCrossentropy

    z = X.astype("float64") @ W + B
    measured = _dense("sigmoid", ScoresCrossentropy(from_logits=True)).evaluate(X, Y, verbose=0)
    np.testing.assert_allclose(measured, _numpy_cross_entropy(1 / (1 + np.exp(-z))), rtol=1e-5)


def test_scores_crossentropy_on_log_odds_is_the_numpy_cross_entropy_of_the_sigmoids_input():
    from keras_capsules.losses import ScoresCrossentropy

    z = X.astype("float64") @ W + B
    measured = _dense("sigmoid", ScoresCrossentropy(from_logits=True, log_odds=True)).evaluate(X, Y, verbose=0)
    np.testing.assert_allclose(measured, _numpy_cross_entropy(z), rtol=1e-4)
    # On probabilities (from_logits=False) after a softmax: the cross-entropy of those probabilities.
    measured = _dense("softmax", ScoresCrossentropy()).evaluate(X, Y, verbose=0)
    np.testing.assert_allclose(measured, _numpy_cross_entropy(z), rtol=1e-5)


def test_scores_crossentropy_round_trips_its_config_and_refuses_log_odds_of_probabilities():
    import keras

    from keras_capsules.losses import ScoresCrossentropy
    from keras_capsules.recipes.base import Recipe

    loss = keras.losses.deserialize(keras.losses.serialize(ScoresCrossentropy(from_logits=True, log_odds=True)))
    assert isinstance(loss, ScoresCrossentropy) and loss.from_logits and loss.log_odds
    with pytest.raises(ValueError, match="ScoresCrossentropy.*from_logits.*True with log_odds=True.*False"):
        ScoresCrossentropy(log_odds=True)
    recipe = Recipe("HeinsenCapsNet", "mnist", loss="log_odds_crossentropy")
    assert recipe.make_loss().log_odds and Recipe("VBCapsNet", "mnist", loss="crossentropy").make_loss().from_logits


def _numpy_one_vs_all(logits, targets):
    """Mean over examples and classes of the sigmoid cross-entropy of ``logits`` against 0/1 ``targets``."""
    p = 1 / (1 + np.exp(-logits.astype("float64")))
    return -(targets * np.log(p) + (1 - targets) * np.log(1 - p)).mean()


def test_scores_binary_crossentropy_takes_class_indices_and_sigmoid_outputs_as_logits_like_numpy():
    # Keras's BinaryCrossentropy(from_logits=True) refuses (batch,) class indices and, on TensorFlow only,
    # reads x W + b instead of the sigmoid's outputs.
    from keras_capsules.losses import ScoresBinaryCrossentropy

    z = X.astype("float64") @ W + B
    one_hot = np.eye(3)[Y]
    scores = 1 / (1 + np.exp(-z))
    loss = ScoresBinaryCrossentropy(from_logits=True)
    np.testing.assert_allclose(
        _dense("sigmoid", loss).evaluate(X, Y, verbose=0), _numpy_one_vs_all(scores, one_hot), rtol=1e-5
    )
    np.testing.assert_allclose(
        _dense("sigmoid", loss).evaluate(X, one_hot, verbose=0), _numpy_one_vs_all(scores, one_hot), rtol=1e-5
    )
    # On probabilities: the sigmoid's outputs are s(z), so the loss is that of the logits z.
    probabilities = _dense("sigmoid", ScoresBinaryCrossentropy()).evaluate(X, Y, verbose=0)
    np.testing.assert_allclose(probabilities, _numpy_one_vs_all(z, one_hot), rtol=1e-4)


def test_scores_binary_crossentropy_is_the_recipes_alias_and_round_trips_its_config():
    import keras

    from keras_capsules.losses import ScoresBinaryCrossentropy
    from keras_capsules.recipes.base import Recipe

    loss = keras.losses.deserialize(keras.losses.serialize(ScoresBinaryCrossentropy(from_logits=True)))
    assert isinstance(loss, ScoresBinaryCrossentropy) and loss.from_logits
    made = Recipe("EffCapsNet", "mnist", loss="binary_crossentropy").make_loss()
    assert isinstance(made, ScoresBinaryCrossentropy) and made.from_logits
    with pytest.raises(ValueError, match=r"`y_true` expected 8 labels"):
        loss(np.zeros((5,)), np.zeros((8, 3), "float32"))
