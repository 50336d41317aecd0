"""Preset folders: what ``presets.save`` writes, a fresh process loading a copy bit for bit, constructors reading folders, bad folders named."""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_capsules import applications, presets
from keras_capsules.testing.tiers import large

NAMES = ("sandal", "sneaker", "boot")
#: A run record shaped like what ``training.train`` returns (only what the card and metadata read).
METRICS = {
    "model": "EffCapsNet",
    "dataset": "shoes",
    "variant": "default",
    "epochs_completed": 2,
    "train_seconds": 60.0,
    "validation": {"examples": 6, "seed": 0, "selection": "uniform draw without replacement from the training split"},
    "validation_accuracy": 0.5,
    "evaluations": {"test": {"accuracy": 0.25, "loss": 1.5}},
}


def _images(seed, n=4):
    return np.random.default_rng(seed).uniform(size=(n, 28, 28, 1)).astype("float32")


@pytest.fixture(scope="module")
def source():
    """EffCapsNet for 3 classes with softmax scores, every weight (BatchNorm statistics included) set to distinct positive values."""
    model = applications.EffCapsNet(classes=3, classifier_activation="softmax")
    rng = np.random.default_rng(11)
    for variable in model.weights:
        variable.assign(rng.uniform(0.05, 0.5, size=variable.shape).astype("float32"))
    model.class_names = NAMES
    return model


@pytest.fixture(scope="module")
def folder(source, tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "shoes"
    assert presets.save(source, path, card="Three kinds of shoes.", metrics=METRICS) == os.fspath(path)
    return path


def _copy(folder, tmp_path, name="copy"):
    target = tmp_path / name
    shutil.copytree(folder, target)
    return target


def test_save_writes_config_weights_metadata_and_card(source, folder):
    assert sorted(os.listdir(folder)) == ["README.md", "config.json", "metadata.json", "model.weights.npz"]
    assert not [n for n in os.listdir(folder.parent) if n != "shoes"]  # nothing beside it: no temporary left
    config = json.loads((folder / "config.json").read_text())
    # The constructor call, written out by hand: EffCapsNet's arguments with the variant's defaults filled in.
    assert config == {
        "format": "keras_capsules.preset",
        "format_version": 1,
        "constructor": "EffCapsNet",
        "arguments": {
            "include_top": True,
            "input_shape": [28, 28, 1],
            "pooling": None,
            "classes": 3,
            "classifier_activation": "softmax",
            "name": "eff_capsnet",
            "include_preprocessing": False,
            "variant": "mnist",
            "router": "self_attention",
            "routing_iterations": None,
            "reconstruction": False,
            "reconstruction_weight": 0.392,
            "primary_capsule_dim": 8,
            "class_capsule_dim": 16,
        },
    }
    metadata = json.loads((folder / "metadata.json").read_text())
    digest = hashlib.sha256((folder / "model.weights.npz").read_bytes()).hexdigest()
    assert metadata["weights"] == {"file": "model.weights.npz", "sha256": digest, "storage_dtype": "float32"}
    assert metadata["class_names"] == list(NAMES) and metadata["metrics"] == METRICS
    assert metadata["preprocessing"] == {
        "input_shape": [28, 28, 1],
        "channels": 1,
        "data_format": "channels_last",
        "input_range": [0, 1],
    }
    assert metadata["parameters"] == sum(int(np.prod(w.shape)) for w in source.weights)
    assert metadata["keras_version"] == keras.__version__ and metadata["keras_capsules_version"]
    with np.load(
        folder / "model.weights.npz"
    ) as archive:  # the library's preset file format: "<layer>/<index>", float32
        np.testing.assert_array_equal(archive["conv1/0"], np.asarray(source.get_layer("conv1").weights[0]))
        assert {archive[key].dtype for key in archive.files} == {np.dtype("float32")}
    card = (folder / "README.md").read_text()
    assert card.startswith("# shoes\n\nThree kinds of shoes.\n") and '"sandal", "sneaker", "boot"' in card
    assert "**50.00 %** on the validation hold-out (6 images)" in card and "**25.00 %** on the `test` split" in card


@large
def test_a_fresh_process_loads_a_copied_folder_bit_for_bit(source, folder, tmp_path):
    copy = _copy(folder, tmp_path / "elsewhere")
    x = _images(0)
    np.save(tmp_path / "x.npy", x)
    script = (
        "import json, sys, numpy as np\n"
        "from keras_capsules import presets\n"
        "model = presets.load(sys.argv[1])\n"
        "np.save(sys.argv[2], model.predict(np.load(sys.argv[3]), verbose=0))\n"
        "print(json.dumps(list(model.class_names)))\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", script, str(copy), str(tmp_path / "scores.npy"), str(tmp_path / "x.npy")],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == list(NAMES)
    np.testing.assert_array_equal(np.load(tmp_path / "scores.npy"), source.predict(x, verbose=0))


def test_constructors_take_the_folder_and_include_top_false_loads_the_backbone(source, folder):
    x = _images(1)
    model = applications.EffCapsNet(weights=str(folder))
    assert model.class_names == NAMES and model.name == "eff_capsnet"
    np.testing.assert_array_equal(model.predict(x, verbose=0), source.predict(x, verbose=0))
    # Arguments that never change the weights may differ from the recorded ones: raw capsule lengths, another name.
    raw = applications.EffCapsNet(weights=folder, classifier_activation=None, name="raw")
    lengths = raw.predict(x, verbose=0)
    softmax = np.exp(lengths) / np.exp(lengths).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(softmax, source.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    assert raw.name == "raw"
    backbone = applications.EffCapsNet(weights=folder, include_top=False)
    assert backbone.output_shape == (None, 1, 1, 128) and backbone.class_names is None
    for name in ("conv1", "bn4", "primary_caps"):
        for loaded, saved in zip(backbone.get_layer(name).weights, source.get_layer(name).weights):
            np.testing.assert_array_equal(np.asarray(loaded), np.asarray(saved))
    opened, key = presets.open_model(str(folder))
    assert key is None and opened.class_names == NAMES


def test_another_application_or_other_arguments_are_refused_naming_both(folder):
    with pytest.raises(
        ValueError,
        match=r"FMCapsNet: argument `weights` expected a preset folder made by FMCapsNet, received '.*shoes', made by EffCapsNet: "
        r"load it with presets\.load\(folder\) or applications\.EffCapsNet\(weights=folder\)",
    ):
        applications.FMCapsNet(weights=folder)
    with pytest.raises(
        ValueError,
        match=r"EffCapsNet: argument `variant` expected 'mnist' \(fixed by preset weights='.*shoes'\), received 'multimnist'",
    ):
        applications.EffCapsNet(weights=folder, variant="multimnist")
    with pytest.raises(
        ValueError,
        match=r"EffCapsNet: argument `classes` expected 3 \(fixed by preset weights='.*shoes', or include_top=False\), received 10",
    ):
        applications.EffCapsNet(weights=folder, classes=10)


def test_missing_corrupt_and_foreign_files_are_named(folder, tmp_path):
    cases = {}
    cases["no weights"] = _copy(folder, tmp_path, "no-weights")
    os.remove(cases["no weights"] / "model.weights.npz")
    cases["changed byte"] = _copy(folder, tmp_path, "changed")
    data = bytearray((cases["changed byte"] / "model.weights.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (cases["changed byte"] / "model.weights.npz").write_bytes(bytes(data))
    cases["truncated metadata"] = _copy(folder, tmp_path, "truncated")
    text = (cases["truncated metadata"] / "metadata.json").read_text()
    (cases["truncated metadata"] / "metadata.json").write_text(text[: len(text) // 2])
    cases["no config"] = _copy(folder, tmp_path, "no-config")
    os.remove(cases["no config"] / "config.json")
    cases["foreign"] = tmp_path / "keras-hub-style"
    cases["foreign"].mkdir()
    (cases["foreign"] / "config.json").write_text(
        json.dumps({"module": "keras_hub.src.models", "class_name": "Backbone"})
    )
    expected = {
        "no weights": r"preset folder '.*no-weights' has no weights file 'model\.weights\.npz' \(recorded in metadata\.json\)",
        "changed byte": r"'.*changed/model\.weights\.npz' has SHA-256 [0-9a-f]{64}, expected [0-9a-f]{64} \(recorded in metadata\.json\)",
        "truncated metadata": r"'.*truncated/metadata\.json' is truncated or corrupt \(not valid JSON",
        "no config": r"preset folder '.*no-config' has no config\.json \(a preset folder holds config\.json, metadata\.json, model\.weights\.npz, README\.md",
        "foreign": r"'.*keras-hub-style' is not a preset folder: its config\.json declares format None, expected 'keras_capsules\.preset'",
    }
    for case, path in cases.items():
        with pytest.raises(presets.PresetFileError, match=r"presets\.load: " + expected[case]):
            presets.load(path)
        with pytest.raises(presets.PresetFileError, match=r"EffCapsNet: " + expected[case]):
            applications.EffCapsNet(weights=path)
    with pytest.raises(presets.PresetFileError, match=r"presets\.load: '.*absent' is not a folder"):
        presets.load(tmp_path / "absent")


def test_save_refuses_to_destroy_and_writes_nothing_on_bad_input(source, folder, tmp_path):
    target = _copy(folder, tmp_path, "preset")
    with pytest.raises(
        ValueError, match=r"presets\.save: folder '.*preset' exists and is not empty; pass overwrite=True"
    ):
        presets.save(source, target)
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("keep me")
    with pytest.raises(
        ValueError,
        match=r"presets\.save: folder '.*notes' is not empty and is not a preset folder; overwrite=True replaces a preset folder only",
    ):
        presets.save(source, other, overwrite=True)
    assert os.listdir(other) == ["todo.txt"]
    with pytest.raises(
        ValueError,
        match=r"presets\.save: argument `class_names` expected 3 names \(one per output unit of the model: its classes\), received \['a', 'b'\]",
    ):
        presets.save(source, tmp_path / "two-names", class_names=("a", "b"))
    assert not (tmp_path / "two-names").exists()
    # overwrite=True replaces a preset folder: the new class names and no file of the old one.
    (target / "stale.txt").write_text("old")
    presets.save(source, target, class_names=("x", "y", "z"), overwrite=True)
    assert sorted(os.listdir(target)) == ["README.md", "config.json", "metadata.json", "model.weights.npz"]
    assert presets.load(target).class_names == ("x", "y", "z")
    assert sorted(os.listdir(tmp_path)) == ["notes", "preset"]  # no temporary left beside them


def test_a_model_without_constructor_goes_through_its_keras_config(tmp_path):
    inputs = keras.Input((4,))
    plain = keras.Model(inputs, keras.layers.Dense(2, name="scores")(inputs), name="plain")
    kernel = np.array([[1.0, -1.0], [0.5, 0.0], [0.0, 2.0], [-1.0, 1.0]], "float32")
    plain.get_layer("scores").set_weights([kernel, np.array([0.25, -0.25], "float32")])
    (tmp_path / "metrics.json").write_text(json.dumps({"dataset": "toy", "validation_accuracy": 0.75}))
    with pytest.raises(
        ValueError,
        match=r"presets\.save: argument `metrics` expected None, a dict or the path of a run's metrics\.json, received '.*absent\.json \(no such file\)'",
    ):
        presets.save(plain, tmp_path / "plain", metrics=tmp_path / "absent.json")
    presets.save(
        plain,
        tmp_path / "plain",
        class_names=["no", "yes"],
        preprocessing={"input_range": [-1, 1]},
        metrics=tmp_path / "metrics.json",
    )
    config = json.loads((tmp_path / "plain" / "config.json").read_text())
    assert "constructor" not in config and config["keras_config"]["class_name"] == "Functional"
    metadata = json.loads((tmp_path / "plain" / "metadata.json").read_text())
    assert metadata["preprocessing"] == {
        "input_shape": [4],
        "channels": 4,
        "data_format": "channels_last",
        "input_range": [-1, 1],
    }
    assert metadata["metrics"] == {"dataset": "toy", "validation_accuracy": 0.75}
    assert (
        "**75.00 %** on the validation hold-out after the last epoch" in (tmp_path / "plain" / "README.md").read_text()
    )  # a partial record
    loaded = presets.load(tmp_path / "plain")
    x = np.array([[1.0, 2.0, 3.0, 4.0]], "float32")
    np.testing.assert_allclose(
        loaded.predict(x, verbose=0), x @ kernel + [0.25, -0.25], rtol=1e-6
    )  # [[-2.75, 8.75]] by hand
    assert presets.class_names_of(loaded) == ("no", "yes")
    assert presets.decode_predictions(loaded.predict(x, verbose=0), loaded, top=1) == [
        [(1, "yes", pytest.approx(8.75))]
    ]
    with pytest.raises(
        ValueError,
        match=r"EffCapsNet: argument `weights` expected a preset folder made by EffCapsNet, received '.*plain', "
        r"made from its Keras config \(no application constructor\): load it with presets\.load\(folder\)",
    ):
        applications.EffCapsNet(weights=tmp_path / "plain")


def test_save_refuses_an_unbuilt_model_or_a_bad_card(source, tmp_path):
    with pytest.raises(
        TypeError, match=r"presets\.save: argument `model` expected a built keras\.Model, received 'weights\.npz'"
    ):
        presets.save("weights.npz", tmp_path / "x")
    with pytest.raises(TypeError, match=r"presets\.save: argument `card` expected None or Markdown text, received 3"):
        presets.save(source, tmp_path / "x", card=3)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("configuration", ["MatrixCapsNet/smallnorb", "FMCapsNet/light"])
def test_other_applications_round_trip_through_a_folder(configuration, tmp_path):
    entry = applications.get_configuration(configuration)
    model = entry.build(**entry.test_settings)
    x = np.random.default_rng(4).uniform(size=(2, *model.input_shape[1:])).astype("float32")
    presets.save(model, tmp_path / "folder", class_names=[f"class {i}" for i in range(model.output_shape[-1])])
    loaded = presets.load(tmp_path / "folder")
    assert type(loaded) is type(model) and loaded.constructor == model.constructor
    assert loaded.class_names == tuple(f"class {i}" for i in range(entry.test_settings["classes"]))
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_a_preset_name_or_a_dataset_name_wins_over_a_folder_of_that_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.makedirs("mnist")  # a data folder named like the preset and the dataset
    assert presets.decode_predictions(np.eye(10, dtype="float32")[:1] * 0.9, "mnist", top=1) == [
        [(0, "0", pytest.approx(0.9))]
    ]
    model = applications.BaselineCNN(weights="mnist")  # the shipped preset, not the folder
    assert model.constructor["arguments"]["variant"] == "matched"
