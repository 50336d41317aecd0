"""SpreadLoss, its margin schedules and SpreadMarginScheduler (docs/reference/routers.md#em-routing)."""

import math

import keras
import numpy as np
import pytest

from keras_capsules.losses import SpreadLoss, SpreadMarginScheduler, spread_margin

SCORES = np.array([[0.1, 0.5, 0.3], [0.9, 0.2, 0.8], [0.4, 0.4, 0.9]], "float32")
LABELS = np.array([1, 0, 2])


def test_hand_computed_values():
    loss = SpreadLoss()  # m = 0.2
    # row 0 (t=1, a_t=0.5): 0.2-0.4 < 0, 0.2-0.2 = 0 -> 0
    # row 1 (t=0, a_t=0.9): 0.2-0.7 < 0, 0.2-0.1 = 0.1 -> 0.01
    # row 2 (t=2, a_t=0.9): 0.2-0.5 < 0 twice -> 0
    assert math.isclose(float(loss(LABELS, SCORES)), 0.01 / 3, rel_tol=1e-5)
    loss.margin.assign(0.9)
    # row 0: (0.9-0.4)^2 + (0.9-0.2)^2 = 0.74; row 1: (0.9-0.7)^2 + (0.9-0.1)^2 = 0.68; row 2: 2 * 0.4^2 = 0.32
    assert math.isclose(float(loss(LABELS, SCORES)), (0.74 + 0.68 + 0.32) / 3, rel_tol=1e-5)
    one_hot = np.eye(3, dtype="float32")[LABELS]
    assert math.isclose(float(loss(one_hot, SCORES)), (0.74 + 0.68 + 0.32) / 3, rel_tol=1e-5)
    per_example = SpreadLoss(margin=0.9, reduction=None)(LABELS[:, None], SCORES)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(per_example), [0.74, 0.68, 0.32], rtol=1e-5)


def test_margin_schedules():
    assert spread_margin(0, "ibm") == pytest.approx(0.2 + 0.79 / (1 + math.exp(4)))
    assert spread_margin(200_000, "ibm") == pytest.approx(0.2 + 0.79 * 0.5)
    assert spread_margin(10**9, "ibm") == pytest.approx(0.2 + 0.79 / (1 + math.exp(-10)))
    assert spread_margin(0, "linear", ramp_steps=100) == pytest.approx(0.2)
    assert spread_margin(50, "linear", ramp_steps=100) == pytest.approx(0.55)
    assert spread_margin(500, "linear", ramp_steps=100) == pytest.approx(0.9)
    with pytest.raises(ValueError, match=r"spread_margin.*ramp_steps"):
        spread_margin(0, "linear")
    with pytest.raises(ValueError, match=r"spread_margin.*schedule"):
        spread_margin(0, "cosine")


def test_config_round_trip():
    loss = SpreadLoss(margin=0.5)
    revived = SpreadLoss.from_config(loss.get_config())
    assert math.isclose(float(keras.ops.convert_to_numpy(revived.margin)), 0.5)
    assert keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(loss)).name == "spread_loss"


def test_scheduler_moves_the_margin_during_fit():
    loss = SpreadLoss()
    seen = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append((float(keras.ops.convert_to_numpy(loss.margin)), logs["loss"]))

    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="sigmoid", kernel_initializer="zeros")]
    )
    # A jit-compiled JAX step reads the margin once at trace time (documented), so run eagerly there.
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss=loss, run_eagerly=keras.backend.backend() == "jax")
    x = np.zeros((8, 4), "float32")
    y = np.array([0, 1, 2, 0, 1, 2, 0, 1])
    scheduler = SpreadMarginScheduler(loss, "linear", ramp_steps=3)
    model.fit(x, y, batch_size=2, epochs=1, verbose=0, shuffle=False, callbacks=[scheduler, Record()])
    margins = [m for m, _ in seen]
    np.testing.assert_allclose(margins, [0.2, 0.2 + 0.7 / 3, 0.2 + 1.4 / 3, 0.9], rtol=1e-6)
    # zero weights: all scores 0.5, so each example's loss is 2 m^2 -> the logged loss follows the margin
    losses = np.array([l for _, l in seen])
    running = np.cumsum([2 * m**2 for m in margins]) / np.arange(1, 5)
    np.testing.assert_allclose(losses, running, rtol=1e-4)
    assert scheduler.step == 4


def test_scheduler_errors():
    with pytest.raises(TypeError, match=r"SpreadMarginScheduler.*loss.*SpreadLoss"):
        SpreadMarginScheduler(keras.losses.MeanSquaredError())
    with pytest.raises(ValueError, match="ramp_steps"):
        SpreadMarginScheduler(SpreadLoss(), "linear")
