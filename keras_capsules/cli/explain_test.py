"""``keras-capsules explain``: matplotlib checked first, default output folders that do not collide."""

import os
import sys

import pytest

from keras_capsules import cli
from keras_capsules.cli.explain import _explain_folder
from keras_capsules.testing.tiers import large


def test_explain_without_matplotlib_fails_at_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails as if matplotlib were absent
    output = tmp_path / "report"
    # The model file does not exist: the matplotlib error comes first, before anything is loaded.
    assert cli.main(["explain", str(tmp_path / "absent.keras"), "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert "needs matplotlib" in err and "--num-images 0" in err and "absent.keras" not in err
    assert not output.exists()
    from keras_capsules.interpret import explain

    with pytest.raises(ImportError, match=r"needs matplotlib.*num_images=0"):
        explain(None, None, str(output), num_images=1)  # checked before the model or the data are touched
    assert not output.exists()


@pytest.mark.xdist_group("cli_usage")
@large
def test_explain_default_folders_do_not_collide(lower_case_run, tmp_path):
    _, output, _ = lower_case_run
    assert _explain_folder(str(output / "model.keras"), None) == os.path.join(
        "runs", "explain-run"
    )  # a train run: its folder
    (tmp_path / "model.keras").write_bytes(b"")
    assert _explain_folder(str(tmp_path / "model.keras"), None) == os.path.join(
        "runs", "explain-model"
    )  # not a run: the file
    assert _explain_folder("some/where/capsnet.keras", None) == os.path.join("runs", "explain-capsnet")


def test_explain_takes_a_preset_on_its_own_dataset_by_default(tmp_path, monkeypatch, capsys):
    import json

    import numpy as np

    from keras_capsules import datasets, presets

    monkeypatch.chdir(tmp_path)
    arguments = ["explain", "EffCapsNet/mnist", "--dataset", "mnist_sample", "--limit", "20", "--num-images", "0"]
    assert cli.main(arguments) == 0
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "runs" / "explain-EffCapsNet-mnist" / "entropy.json").read_text())
    images, labels = datasets.load_arrays("mnist_sample", "test")
    model = presets.open_model("EffCapsNet/mnist")[0]
    expected = np.mean(np.argmax(model.predict(images[:20] / 255.0, verbose=0), axis=1) == labels[:20])
    assert report["accuracy"] == expected and report["num_samples"] == 20
    assert "EffCapsNet/mnist on mnist_sample (test, 20 images" in out
    assert cli.main(["explain", "EffCapsNet/mnst", "--num-images", "0"]) == 2
    assert "explain: argument `MODEL` expected a .keras file, a preset MODEL/NAME" in capsys.readouterr().err


def test_explain_names_a_model_without_routed_capsule_layers_before_reading_data(tmp_path, capsys):
    import keras

    path = str(tmp_path / "cnn.keras")
    inputs = keras.Input((28, 28, 1))
    keras.Model(inputs, keras.layers.Dense(10)(keras.layers.Flatten()(inputs))).save(path)
    output = tmp_path / "report"
    assert cli.main(["explain", path, "--dataset", "absent_set", "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert "explain: " + path + " has no routed capsule layer (FcCaps, ConvCaps, ConcurrentRouting)" in err
    assert "interpret.plot_islands" in err and "absent_set" not in err and not output.exists()
