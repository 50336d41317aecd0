"""Model files: atomic ``.keras`` saves and exports, clear errors for missing, truncated or foreign files."""

import os
import zipfile

import keras
import numpy as np
import pytest

from keras_capsules.training import ModelFileError, export_saved_model, load_model, load_weights_file, save_model


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


def _rewrite_archive(source, target, change):
    """Copies the ``.keras`` zip ``source`` to ``target`` with ``change(name, data)`` applied (``None`` drops the member)."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as copy:
        for name in original.namelist():
            data = change(name, original.read(name))
            if data is not None:
                copy.writestr(name, data)


def test_archives_with_a_truncated_config_or_no_weights(tmp_path):
    good = str(tmp_path / "good.keras")
    save_model(_model(), good)
    _rewrite_archive(good, tmp_path / "cut.keras", lambda name, data: data[: len(data) // 2] if name == "config.json" else data)
    with pytest.raises(ModelFileError, match=r"load_model: '.*cut\.keras' is truncated or corrupt \(its config\.json is not valid JSON"):
        load_model(str(tmp_path / "cut.keras"))
    _rewrite_archive(good, tmp_path / "bare.keras", lambda name, data: None if name.endswith(".h5") else data)
    with pytest.raises(ModelFileError, match=r"load_model: '.*bare\.keras'"):
        load_model(str(tmp_path / "bare.keras"))


def test_load_weights_file_names_bad_files(tmp_path):
    source, target = _model(), _model()
    weights = str(tmp_path / "w.weights.h5")
    source.save_weights(weights)
    x = np.ones((1, 4), "float32")
    load_weights_file(target, weights)
    np.testing.assert_array_equal(target.predict(x, verbose=0), source.predict(x, verbose=0))
    cut = tmp_path / "cut.weights.h5"
    cut.write_bytes(open(weights, "rb").read()[:200])
    with pytest.raises(ModelFileError, match=r"load_weights: '.*cut\.weights\.h5' could not be loaded into .*truncated, corrupt"):
        load_weights_file(target, str(cut))
    with pytest.raises(ModelFileError, match=r"load_weights: no such file '.*absent\.weights\.h5'"):
        load_weights_file(target, str(tmp_path / "absent.weights.h5"))
    wider = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    with pytest.raises(ModelFileError, match=r"w\.weights\.h5' could not be loaded .*made for another model"):
        load_weights_file(wider, weights)
    with pytest.raises(TypeError, match=r"load_weights: argument `path` expected a file path"):
        load_weights_file(target, 3)


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


def test_export_never_destroys_user_files(tmp_path, monkeypatch):
    from keras_capsules.training import export_keras_file

    run = tmp_path / "run"
    run.mkdir()
    model_path = str(run / "model.keras")
    save_model(_model(), model_path)
    (run / "metrics.json").write_text("{}")
    # The folder holding the model: refused even with overwrite=True, before anything is loaded.
    for overwrite in (False, True):
        with pytest.raises(ValueError, match=r"holds the input .*model\.keras"):
            export_keras_file(model_path, str(run), overwrite=overwrite)
    assert sorted(os.listdir(run)) == ["metrics.json", "model.keras"]
    # An existing file is never replaced by a folder.
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me")
    with pytest.raises(ValueError, match=r"notes\.txt' is an existing file"):
        export_keras_file(model_path, str(notes), overwrite=True)
    assert notes.read_text() == "keep me"
    # A non-empty folder is replaced only on request.
    other = tmp_path / "other"
    other.mkdir()
    (other / "mine.txt").write_text("keep me")
    with pytest.raises(ValueError, match=r"exists and is not empty; pass overwrite=True \(CLI: --overwrite\)"):
        export_keras_file(model_path, str(other))
    assert os.listdir(other) == ["mine.txt"]
    export_keras_file(model_path, str(other), overwrite=True)
    assert "saved_model.pb" in os.listdir(other) and "mine.txt" not in os.listdir(other)
    # The current folder (or a parent of it) is refused with a suggestion.
    monkeypatch.chdir(run)
    with pytest.raises(ValueError, match=r"current folder or one of its parents"):
        export_keras_file("model.keras", ".", overwrite=True)
    assert sorted(os.listdir(run)) == ["metrics.json", "model.keras"]
    # An empty folder or a new name is fine without overwrite.
    (tmp_path / "empty").mkdir()
    export_keras_file(model_path, str(tmp_path / "empty"))
    assert "saved_model.pb" in os.listdir(tmp_path / "empty")


def test_cli_export_refuses_and_explains(tmp_path, capsys):
    from keras_capsules import cli

    model_path = str(tmp_path / "model.keras")
    save_model(_model(), model_path)
    assert cli.main(["export", model_path, str(tmp_path)]) == 2
    assert "holds the input" in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["model.keras"]
