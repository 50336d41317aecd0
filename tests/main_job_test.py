"""The README's main job, end to end through the CLI (small settings)."""

import json

import keras
import numpy as np
import pytest

from keras_capsules import cli


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="tf.data pipelines and SavedModel export are TensorFlow-only"
)
def test_train_command_writes_metrics_model_and_export(tmp_path, capsys):
    out = tmp_path / "run"
    code = cli.main(
        [
            "train",
            "EffCapsNet",
            "--epochs",
            "1",
            "--limit",
            "1280",
            "--batch-size",
            "32",
            "--output",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["model"] == "EffCapsNet" and metrics["dataset"] == "mnist_sample"
    # 40 steps of the paper recipe reach 43.6 % on the 2,000 held-out images (TensorFlow 2.21, CPU);
    # chance is 10 % (+-0.7 % std).
    assert metrics["test_accuracy"] >= 0.3 and np.isfinite(metrics["test_loss"])
    assert metrics["recipe"]["learning_rate"] == 5e-4 and metrics["recipe"]["batch_size"] == 32
    assert (out / "model.keras").is_file() and (out / "export" / "saved_model.pb").is_file()
    assert "test: accuracy" in capsys.readouterr().out
    model = keras.saving.load_model(str(out / "model.keras"))
    assert model.count_params() == metrics["parameters"]


def test_train_command_reports_missing_data(tmp_path, capsys, monkeypatch):
    # $KERAS_CAPSULES_DATA is searched after --data-dir, and TFDS after both: neither may hold MNIST here.
    monkeypatch.delenv("KERAS_CAPSULES_DATA", raising=False)
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))
    code = cli.main(
        ["train", "EffCapsNet", "--dataset", "mnist", "--data-dir", str(tmp_path), "--output", str(tmp_path / "o")]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "images-idx3" in err and "labels-idx1" in err and str(tmp_path) in err
