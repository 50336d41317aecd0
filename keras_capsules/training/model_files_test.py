"""Model files: atomic ``.keras`` saves and exports, clear errors for missing, truncated or foreign files."""

import os

import keras
import numpy as np
import pytest

from keras_capsules.training import ModelFileError, export_saved_model, load_model, save_model


def _model():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    return model


def test_save_replaces_atomically_and_loads(tmp_path):
    path = str(tmp_path / "model.keras")
    first, second = _model(), _model()
    save_model(first, path)
    save_model(second, path)
    assert os.listdir(tmp_path) == ["model.keras"]  # no temporary file left behind
    x = np.ones((1, 4), "float32")
    np.testing.assert_array_equal(load_model(path).predict(x, verbose=0), second.predict(x, verbose=0))
    with pytest.raises(ValueError, match=r"save_model: argument `path` expected a file name ending in '\.keras'"):
        save_model(first, str(tmp_path / "model.h5"))


def test_missing_truncated_and_foreign_files(tmp_path):
    with pytest.raises(ModelFileError, match=r"load_model: no such file"):
        load_model(str(tmp_path / "absent.keras"))
    path = tmp_path / "model.keras"
    save_model(_model(), str(path))
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ModelFileError, match=r"model\.keras.*(truncated or corrupt)"):
        load_model(str(path))
    other = tmp_path / "notes.keras"
    other.write_text("hello")
    with pytest.raises(ModelFileError, match=r"notes\.keras' is not a \.keras archive"):
        load_model(str(other))


def test_failed_export_keeps_the_previous_export(tmp_path):
    target = str(tmp_path / "export")
    export_saved_model(_model(), target)
    before = sorted(os.listdir(target))

    class Broken(keras.Model):
        def call(self, x):
            return x

    with pytest.raises(ValueError):
        export_saved_model(Broken(), target)  # never built: Keras refuses to export it
    assert sorted(os.listdir(target)) == before and sorted(os.listdir(tmp_path)) == ["export"]
