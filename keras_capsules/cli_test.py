"""The ``keras-capsules`` command line: train (recipe overrides) -> evaluate -> export, and its errors."""

import argparse
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import cli, datasets
from keras_capsules.saving import load_model

# Under pytest-xdist (--dist loadgroup) the module-scoped fixture runs once: every test here on one worker.
pytestmark = pytest.mark.xdist_group("cli_run")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    output = tmp_path_factory.mktemp("cli") / "run"
    code = cli.main(
        ["train", "EffCapsNet", "--epochs", "2", "--batch-size", "16", "--limit", "96", "--eval-limit", "200", "--output", str(output),
         "--learning-rate", "0.002", "--lr-decay", "0.5", "--augment", "mnist_shift2", "--model-arg", "reconstruction=False",
         "--no-export", "--quiet", "--validation-examples", "0"]  # fmt: skip
    )
    assert code == 0
    with open(output / "metrics.json") as handle:
        return output, json.load(handle)


def test_train_applies_every_override(run):
    _, metrics = run
    recipe = metrics["recipe"]
    assert (recipe["epochs"], recipe["batch_size"], recipe["learning_rate"], recipe["lr_decay"]) == (2, 16, 0.002, 0.5)
    assert recipe["augmentation"] == "mnist_shift2" and recipe["model_kwargs"] == {"variant": "mnist", "reconstruction": False}
    assert metrics["epochs_completed"] == 2 and metrics["steps_per_epoch"] == 6 and metrics["optimizer_iterations"] == 12
    assert len(metrics["history"]["loss"]) == 2
    assert metrics["validation"]["examples"] == 0 and "val_loss" not in metrics["history"]  # --validation-examples 0: all 96 train
    # 12 steps reach 31.5 % on these 200 held-out images (TensorFlow 2.21, CPU); chance is 10 % (+-2.1 % std).
    assert metrics["test_accuracy"] >= 0.2


def test_evaluate_reproduces_the_training_run_and_export_serves_predictions(run, capsys, tmp_path):
    output, metrics = run
    model_file = str(output / "model.keras")
    capsys.readouterr()
    assert cli.main(["evaluate", model_file, "--dataset", "mnist_sample", "--limit", "200"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["augment"] == "mnist_shift2"  # read from the metrics.json next to the model
    assert report["accuracy"] == pytest.approx(metrics["test_accuracy"]) and report["loss"] == pytest.approx(metrics["test_loss"], rel=1e-5)

    export_dir = str(tmp_path / "served")
    assert cli.main(["export", model_file, export_dir]) == 0
    images = datasets.load_arrays("mnist_sample", "test")[0][:5].astype("float32") / 255.0
    loaded = tf.saved_model.load(export_dir)  # keep a reference: its variables die with it
    served = loaded.serve(tf.constant(images)).numpy()
    np.testing.assert_allclose(served, load_model(model_file).predict(images, verbose=0), atol=1e-5)


def test_errors_exit_with_status_2_and_a_message(tmp_path, capsys):
    assert cli.main(["train", "NoSuchNet", "--output", str(tmp_path / "x")]) == 2
    assert "no recipe for model 'NoSuchNet'" in capsys.readouterr().err
    broken = tmp_path / "broken.keras"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    assert cli.main(["export", str(broken), str(tmp_path / "out")]) == 2
    assert "broken.keras" in capsys.readouterr().err and not os.path.exists(tmp_path / "out")
    assert cli.main(["train", "EffCapsNet", "--model-arg", "oops"]) == 2
    assert "--model-arg` expected KEY=VALUE" in capsys.readouterr().err


def test_recipes_listing(capsys):
    assert cli.main(["recipes", "MatrixCapsNet"]) == 0
    out = capsys.readouterr().out
    assert "--recipe novel_azimuth" in out and "EffCapsNet" not in out


def test_parser_has_one_builder_per_subcommand():
    names = []
    for add_command in cli.COMMANDS:
        subparsers = argparse.ArgumentParser().add_subparsers(dest="command")
        add_command(subparsers)
        (name,) = subparsers.choices  # each builder adds exactly one subcommand...
        assert callable(subparsers.choices[name].get_default("handler")), name  # ...with its handler
        names.append(name)
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert sorted(names) == sorted(commands) and len(set(names)) == len(names)
    assert {"train", "evaluate", "export", "recipes", "explain", "tune"} <= set(commands)


def test_robustness_command_prints_the_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert cli.main(["robustness", "effcapsnet/MNIST", "--dataset", "mnist_sample", "--limit", "16", "--transform", "scale", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    record = json.loads(out.read_text())
    assert (record["model"], record["examples"], list(record["table"])) == ("EffCapsNet/mnist", 16, ["scale"])
    # Every magnitude of the table is printed, with its accuracy as a multiple of 1/16.
    for magnitude, accuracy in record["table"]["scale"]:
        assert abs(accuracy * 16 - round(accuracy * 16)) < 1e-6
    assert "scale" in printed and len(record["table"]["scale"]) == 5


def test_evaluate_on_affnist_or_its_generated_stand_in(tmp_path, capsys):
    # No affNIST files in the data folder: "affnist|affine_mnist" evaluates on the generated set and says so.
    from keras_capsules import applications
    from keras_capsules.saving import save_model

    model_file = str(tmp_path / "cnn.keras")
    save_model(applications.BaselineCNN(input_shape=(40, 40, 1), classes=10), model_file)
    capsys.readouterr()
    code = cli.main(
        ["evaluate", model_file, "--dataset", "affnist|affine_mnist", "--data-dir", str(tmp_path), "--limit", "16",
         "--dataset-option", "base=mnist_sample", "--augment", "none"]  # fmt: skip
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "no official affNIST test files" in out and "evaluating on affine_mnist:test" in out
    report = json.loads(out[out.index("{") :])
    assert report["dataset"] == "affine_mnist" and 0.0 <= report["accuracy"] <= 1.0
