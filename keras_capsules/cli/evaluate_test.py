"""``keras-capsules evaluate``: a train run's result reproduced, the trained-on dataset by default, affNIST or its stand-in."""

import json
import os
import shutil

import pytest

from keras_capsules import cli
from keras_capsules.testing.tiers import large

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE_DIR = os.path.join(ROOT, "keras_capsules", "datasets", "sample")


@pytest.mark.xdist_group("cli_run")
@large
def test_evaluate_reproduces_the_training_run(overrides_run, capsys):
    output, metrics = overrides_run
    model_file = str(output / "model.keras")
    capsys.readouterr()
    assert cli.main(["evaluate", model_file, "--dataset", "mnist_sample", "--limit", "200"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["augment"] == "mnist_shift2"  # read from the metrics.json next to the model
    assert report["accuracy"] == pytest.approx(metrics["test_accuracy"]) and report["loss"] == pytest.approx(
        metrics["test_loss"], rel=1e-5
    )


@pytest.mark.xdist_group("cli_usage")
@large
def test_evaluate_refuses_mnist_files_as_fashion_mnist_and_defaults_to_the_training_set(
    lower_case_run, tmp_path, capsys
):
    _, output, metrics = lower_case_run
    model_file = str(output / "model.keras")
    mnist = tmp_path / "mnist-files"
    mnist.mkdir()
    for name in os.listdir(SAMPLE_DIR):  # the official MNIST test files
        if name.endswith(".gz"):
            shutil.copy(os.path.join(SAMPLE_DIR, name), mnist)
    capsys.readouterr()
    assert cli.main(["evaluate", model_file, "--dataset", "fashion_mnist", "--data-dir", str(mnist)]) == 2
    err = capsys.readouterr().err
    assert (
        "is mnist's t10k-images-idx3-ubyte file, not fashion_mnist's" in err and "(sub-folder 'fashion-mnist')" in err
    )
    # No --dataset: the dataset recorded in the metrics.json next to the model.
    assert cli.main(["evaluate", model_file, "--limit", "32"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dataset"] == "mnist_sample" and report["accuracy"] == pytest.approx(metrics["test_accuracy"])
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(model_file, other / "model.keras")
    (other / "metrics.json").write_text(json.dumps({"dataset": "fashion_mnist"}))
    assert cli.main(["evaluate", str(other / "model.keras")]) == 2
    assert "dataset 'fashion_mnist' (test split) was not found" in capsys.readouterr().err


def test_evaluate_on_affnist_or_its_generated_stand_in(tmp_path, capsys):
    # No affNIST files in the data folder: "affnist|affine_mnist" evaluates on the generated set and says so.
    from keras_capsules import applications
    from keras_capsules.saving import save_model

    model_file = str(tmp_path / "cnn.keras")
    save_model(applications.BaselineCNN(input_shape=(40, 40, 1), classes=10), model_file)
    capsys.readouterr()
    code = cli.main(
        [
            "evaluate",
            model_file,
            "--dataset",
            "affnist|affine_mnist",
            "--data-dir",
            str(tmp_path),
            "--limit",
            "16",
            "--dataset-option",
            "base=mnist_sample",
            "--augment",
            "none",
        ]  # fmt: skip
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "no official affNIST test files" in out and "evaluating on affine_mnist:test" in out
    report = json.loads(out[out.index("{") :])
    assert report["dataset"] == "affine_mnist" and 0.0 <= report["accuracy"] <= 1.0


def test_evaluate_takes_a_preset_and_names_what_it_cannot_open(capsys):
    import numpy as np

    from keras_capsules import datasets, presets

    assert cli.main(["evaluate", "EffCapsNet/mnist", "--dataset", "mnist_sample", "--limit", "64"]) == 0
    report = json.loads(capsys.readouterr().out)
    images, labels = datasets.load_arrays("mnist_sample", "test")
    model = presets.open_model("EffCapsNet/mnist")[0]
    predicted = np.argmax(model.predict(images[:64] / 255.0, verbose=0), axis=1)  # NumPy: top class against labels
    assert report["accuracy"] == pytest.approx(np.mean(predicted == labels[:64]))
    assert (report["model"], report["dataset"], report["augment"]) == ("EffCapsNet/mnist", "mnist_sample", None)
    assert cli.main(["evaluate", "EffCapsNet/mnst"]) == 2
    assert "expected a .keras file, a preset MODEL/NAME" in capsys.readouterr().err
