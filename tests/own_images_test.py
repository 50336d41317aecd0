"""A user's own folder of images, end to end through the command line: train, predict named classes in a fresh process, evaluate, share a preset folder."""

import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
from PIL import Image

from keras_capsules import cli
from keras_capsules.testing.tiers import large

pytestmark = pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.data pipelines are TensorFlow-only")
CLASSES = ("blue sky", "grass", "tomato")  # a space in a class name, kept exactly
COLOURS = {"blue sky": (40, 90, 220), "grass": (40, 180, 60), "tomato": (220, 50, 40)}


def _write_folder(root, rng):
    """train/ and test/ with 12 and 4 RGB 28x28 PNGs per class (a coloured square on noise); one train image is 32x32."""
    for split, count in (("train", 12), ("test", 4)):
        for name in CLASSES:
            os.makedirs(root / split / name)
            for index in range(count):
                image = rng.integers(0, 60, (28, 28, 3)).astype(np.uint8)
                top, left = rng.integers(2, 14, 2)
                image[top : top + 12, left : left + 12] = COLOURS[name]
                if split == "train" and name == "grass" and index == 0:
                    image = np.asarray(Image.fromarray(image).resize((32, 32)))
                Image.fromarray(image).save(root / split / name / f"{index}.png")


def _cli(*args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run(
        [sys.executable, "-m", "keras_capsules.cli", *args], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("own")
    _write_folder(root / "photos", np.random.default_rng(0))
    run, preset = root / "run", root / "preset"
    args = [
        "train",
        "EffCapsNet",
        "--data-dir",
        str(root / "photos"),
        "--epochs",
        "2",
        "--output",
        str(run),
        "--no-export",
        "--quiet",
    ]
    assert cli.main([*args, "--save-preset", str(preset)]) == 0
    return root, json.loads((run / "metrics.json").read_text())


def test_the_folder_is_read_and_trained_with_the_generic_recipe(trained):
    root, metrics = trained
    folder = metrics["dataset_folder"]
    assert folder["class_names"] == list(CLASSES) and folder["image_size"] == [28, 28] and folder["channels"] == 3
    assert folder["resized"] == 1  # the one 32x32 image
    assert metrics["recipe"]["source"].startswith("generic recipe of EffCapsNet") and metrics["recipe"]["epochs"] == 2
    # The default hold-out is a tenth of the 36 training images (3), one per class.
    assert metrics["validation"]["examples"] == 3 and metrics["validation"]["per_class"] == {
        name: 1 for name in CLASSES
    }
    assert set(metrics["evaluations"]) == {"test"}  # test/ read once, at the end
    test_accuracy = metrics["evaluations"]["test"]["accuracy"]
    assert abs(test_accuracy * 12 - round(test_accuracy * 12)) < 1e-4  # 12 test images


@large
def test_predict_names_the_folder_classes_in_a_fresh_process(trained, tmp_path):
    root, _ = trained
    image = tmp_path / "photo.png"
    shutil.copy(root / "photos" / "test" / "tomato" / "0.png", image)
    model = keras.saving.load_model(str(root / "run" / "model.keras"))
    assert tuple(model.class_names) == CLASSES
    expected = model.predict(np.asarray(Image.open(image), np.float32)[None] / 255.0, verbose=0)[0]
    for source in (root / "run" / "model.keras", root / "preset"):  # the .keras file, then the shared preset folder
        result = _cli("predict", str(source), str(image))
        assert result.returncode == 0, result.stderr
        lines = result.stdout.strip().splitlines()[1:]
        names = [line.split(None, 2)[2] for line in lines]
        scores = [float(line.split()[0]) for line in lines]
        assert names == [CLASSES[i] for i in np.argsort(-expected, kind="stable")]
        np.testing.assert_allclose(scores, np.sort(expected)[::-1], atol=1e-4)


@large
def test_evaluate_reads_the_folder_at_the_model_input(trained, capsys):
    root, metrics = trained
    assert cli.main(["evaluate", str(root / "run" / "model.keras"), "--data-dir", str(root / "photos")]) == 0
    out = capsys.readouterr().out
    result = json.loads(out[out.index("{") :])
    assert result["split"] == "test" and result["augment"] == "random_shift"
    assert (
        abs(result["accuracy"] - metrics["evaluations"]["test"]["accuracy"]) < 1e-6
    )  # the same 12 test images as train's end


def test_a_data_dir_without_class_folders_is_an_error_not_the_sample(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("no images here")
    assert cli.main(["train", "EffCapsNet", "--data-dir", str(tmp_path), "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert (
        "argument `--data-dir` expected a folder of images with one subfolder per class" in err and err.count("\n") == 1
    )
    assert "--dataset NAME" in err and not (tmp_path / "o").exists()
