"""Pruning reaches the requested sparsity and pruned weights stay exactly zero (fit, ``.keras`` round trip, fit again)."""

import keras
import numpy as np
import pytest

from keras_capsules import layers, losses
from keras_capsules.training import pruning


def _model():
    inputs = keras.Input((10, 10, 1))
    x = keras.layers.Conv2D(6, 3, activation="relu", name="conv1")(inputs)
    primary = layers.PrimaryCaps(4, 4, kernel_size=3, strides=2, name="primary_caps")(x)
    poses, _ = layers.FcCaps(3, 4, router={"name": "dynamic", "use_bias": True}, name="class_caps")(primary)
    model = keras.Model(inputs, layers.Length()(poses))
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=losses.MarginLoss())
    return model


def _data(n=48):
    rng = np.random.default_rng(0)
    return rng.uniform(size=(n, 10, 10, 1)).astype("float32"), rng.integers(0, 3, n).astype("int32")


def _zeros(model):
    return [np.asarray(keras.ops.convert_to_numpy(v)) == 0 for v in pruning.prunable_weights(model)]


def _assert_still_zero(model, zero_masks):
    for before, now in zip(zero_masks, _zeros(model)):
        assert np.all(now[before]), "a pruned weight became non-zero"


def test_scope_and_sparsity_report():
    model = _model()
    assert [v.path for v in pruning.prunable_weights(model)] == [
        "conv1/kernel",
        "primary_caps/pose_conv/kernel",
        "class_caps/votes/kernel",
    ]
    shrunk = {v.path for v in pruning.shrinkable_weights(model)}
    assert {"conv1/bias", "primary_caps/pose_conv/bias"} <= shrunk
    assert any(p.startswith("class_caps/dynamic_router") and p.endswith("/bias") for p in shrunk)  # the routing bias
    report = pruning.sparsity(model)
    assert report["sparsity"] == 0.0 and report["total"] == 3 * 3 * 6 + 3 * 3 * 6 * 16 + 36 * 3 * 4 * 4
    assert set(report["weights"]) == {"conv1/kernel", "primary_caps/pose_conv/kernel", "class_caps/votes/kernel"}


@pytest.mark.parametrize("scope", ["global", "layer"])
def test_single_shot_pruning_reaches_the_sparsity_and_survives_fit_save_load_fit(scope, tmp_path):
    model = _model()
    x, y = _data()
    report = pruning.prune_magnitude(model, 0.6, scope=scope)
    assert report["sparsity"] == pytest.approx(0.6, abs=1e-3)
    if scope == "layer":
        assert all(w["sparsity"] == pytest.approx(0.6, abs=0.02) for w in report["weights"].values())
    zero = _zeros(model)
    model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    _assert_still_zero(model, zero)

    path = str(tmp_path / "pruned.keras")
    model.save(path)
    revived = keras.saving.load_model(path)
    _assert_still_zero(revived, zero)
    pruning.keep_pruned(revived)
    before = [np.asarray(keras.ops.convert_to_numpy(v)) for v in revived.trainable_weights]
    revived.fit(x, y, epochs=1, batch_size=16, verbose=0)
    _assert_still_zero(revived, zero)
    assert any(not np.array_equal(b, keras.ops.convert_to_numpy(v)) for b, v in zip(before, revived.trainable_weights))


def test_iterative_magnitude_pruning_follows_its_schedule():
    model = _model()
    x, y = _data()
    callback = pruning.MagnitudePruning(0.75, start_epoch=1, power=1)
    model.fit(x, y, epochs=4, batch_size=16, verbose=0, callbacks=[callback])
    targets = [entry["target"] for entry in callback.history]
    assert [entry["epoch"] for entry in callback.history] == [1, 2, 3]
    np.testing.assert_allclose(targets, [0.0, 0.375, 0.75])
    assert pruning.sparsity(model)["sparsity"] == pytest.approx(0.75, abs=1e-3)
    assert callback.schedule(2, 3) == pytest.approx(0.375)


def test_lobster_pruning_keeps_val_loss_and_zeros():
    model = _model()
    x, y = _data()
    callback = pruning.LobsterPruning((x[:24], y[:24]), strength=1e-2, max_search_steps=6)
    history = model.fit(x, y, epochs=2, batch_size=16, verbose=0, callbacks=[callback])
    assert isinstance(model.optimizer, keras.optimizers.Adam)  # the LOBSTER wrapper is removed after fit
    assert [entry["epoch"] for entry in callback.history] == [0, 1]
    assert callback.history[1]["strength"] == pytest.approx(1e-2 * 0.99, rel=1e-5)
    assert all(entry["search_steps"] <= 6 for entry in callback.history)
    final = pruning.sparsity(model)["sparsity"]
    assert final > 0 and history.history["sparsity"][-1] == final
    # The accepted threshold never raises the validation loss.
    assert pruning.validation_loss(model, (x[:24], y[:24])) <= callback.history[-1]["base_val_loss"] + 1e-6
    zero = _zeros(model)
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)
    _assert_still_zero(model, zero)


def test_threshold_search_by_hand():
    model = _model()
    x, y = _data(24)
    variables = pruning.prunable_weights(model)
    threshold, base, steps = pruning.search_magnitude_threshold(model, (x, y), variables, max_steps=5)
    assert len(steps) == 5 and steps[0][0] == pytest.approx(
        np.mean(np.concatenate([np.abs(keras.ops.convert_to_numpy(v)).ravel() for v in variables])), rel=1e-5
    )
    accepted = [t for t, loss, ok in steps if ok]
    assert threshold == (accepted[-1] if accepted else 0.0)
    assert all((loss <= base) == ok for _, loss, ok in steps)


def test_lobster_optimizer_shrinks_insensitive_weights():
    variable = keras.Variable(np.array([1.0, 2.0, -3.0, 4.0], "float32"))
    optimizer = pruning.LobsterOptimizer(keras.optimizers.SGD(learning_rate=0.0), strength=0.1)
    optimizer.apply([np.array([0.0, 0.5, 2.0, -0.25], "float32")], [variable])
    # p - 0.1 * p * relu(1 - |g|): factors 0.9, 0.95, 1, 0.925.
    np.testing.assert_allclose(keras.ops.convert_to_numpy(variable), [0.9, 1.9, -3.0, 3.7], rtol=1e-6)
    assert int(keras.ops.convert_to_numpy(optimizer.iterations)) == 1
    revived = pruning.LobsterOptimizer.from_config(optimizer.get_config())
    assert revived.initial_strength == 0.1 and isinstance(revived.inner_optimizer, keras.optimizers.SGD)
    skip = keras.Variable(np.array([1.0], "float32"), name="skip")
    selective = pruning.LobsterOptimizer("sgd", strength=0.5, variable_paths=["other"])
    selective.apply([np.zeros(1, "float32")], [skip])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(skip), [1.0])


def test_errors_name_the_function_and_argument():
    model = _model()
    with pytest.raises(ValueError, match=r"prune_magnitude.*target_sparsity.*\[0, 1\)"):
        pruning.prune_magnitude(model, 1.0)
    with pytest.raises(ValueError, match=r"prune_magnitude.*scope"):
        pruning.prune_magnitude(model, 0.5, scope="unit")
    with pytest.raises(ValueError, match=r"MagnitudePruning.*target_sparsity"):
        pruning.MagnitudePruning(-0.1)
    with pytest.raises(ValueError, match=r"LobsterOptimizer.*strength"):
        pruning.LobsterOptimizer("adam", strength=-1)
    dense = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    with pytest.raises(ValueError, match=r"prunable_weights.*model"):
        pruning.sparsity(dense)
