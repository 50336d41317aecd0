"""SavedModel export: atomic, and never destroying a file or folder the user did not ask to replace."""

import os

import keras
import pytest

from keras_capsules.export import export_keras_file, export_saved_model
from keras_capsules.saving import save_model

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="SavedModel export is TensorFlow-specific"
)


def _model():
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])


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
