"""The command line as people use it: any-case names, one-line errors, Ctrl-C, finished runs, CLI-worded data errors."""

import json
import logging
import os
import shutil
import sys

import pytest

from keras_capsules import cli

# Under pytest-xdist (--dist loadgroup) the module-scoped fixture runs once: every test here on one worker.
pytestmark = pytest.mark.xdist_group("cli_usage")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE_DIR = os.path.join(ROOT, "keras_capsules", "datasets", "sample")
TRAIN = ["--epochs", "1", "--batch-size", "16", "--limit", "32", "--eval-limit", "32", "--augmentation", "none",
         "--model-arg", "reconstruction=False", "--no-export", "--quiet"]  # fmt: skip


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    monkeypatch.delenv("KERAS_CAPSULES_DATA", raising=False)
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "no-tfds"))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished run trained with the model name in lower case."""
    output = tmp_path_factory.mktemp("usage") / "run"
    argv = ["train", "effcapsnet", "--output", str(output), *TRAIN]
    assert cli.main(argv) == 0
    with open(output / "metrics.json") as handle:
        return argv, output, json.load(handle)


def test_model_names_are_case_insensitive_with_a_suggestion(run, capsys):
    _, _, metrics = run
    assert metrics["model"] == "EffCapsNet" and metrics["epochs_completed"] == 1
    capsys.readouterr()
    assert cli.main(["recipes", "matrixcapsnet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith("MatrixCapsNet ") for line in lines)
    assert cli.main(["train", "EfCapsNet", *TRAIN]) == 2
    err = capsys.readouterr().err
    assert "no recipe for model 'EfCapsNet'. Did you mean 'EffCapsNet'?" in err and err.count("\n") == 1
    assert cli.main(["tune", "Capsnett"]) == 2
    assert "Did you mean 'CapsNet'?" in capsys.readouterr().err


def test_unknown_model_argument_is_one_line(tmp_path, capsys):
    assert cli.main(["train", "EffCapsNet", "--output", str(tmp_path / "o"), *TRAIN, "--model-arg", "foo=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("keras-capsules train: error: train: EffCapsNet has no constructor argument 'foo'") and err.count("\n") == 1
    assert "routing_iterations" in err and "Traceback" not in err
    assert not os.path.exists(tmp_path / "o" / "checkpoints")  # refused before any data or model was made


def test_rerunning_a_finished_train_reports_the_stored_result(run, capsys):
    argv, output, metrics = run
    before = (output / "metrics.json").read_text()
    capsys.readouterr()
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "this run was already complete (1 epochs)" in out and "resumed" not in out
    assert f"accuracy {metrics['evaluations']['test']['accuracy']:.4f}" in out
    assert (output / "metrics.json").read_text() == before  # nothing retrained or rewritten


def test_ctrl_c_stops_cleanly_and_the_same_command_resumes(tmp_path, monkeypatch, capsys):
    from keras_capsules.training.checkpoints import EpochCheckpoint

    original = EpochCheckpoint.on_epoch_end

    def interrupt_after_first_epoch(self, epoch, logs=None):
        original(self, epoch, logs)
        raise KeyboardInterrupt  # what Ctrl-C raises in the main thread

    argv = ["train", "EffCapsNet", "--output", str(tmp_path / "run"), *TRAIN]
    argv[argv.index("--epochs") + 1] = "2"
    monkeypatch.setattr(EpochCheckpoint, "on_epoch_end", interrupt_after_first_epoch)
    assert cli.main(argv) == 130
    err = capsys.readouterr().err
    assert err.strip() == "keras-capsules train: stopped; run the same command to resume."
    assert sorted(os.listdir(tmp_path / "run" / "checkpoints"))[-1] == "epoch-0001"
    monkeypatch.setattr(EpochCheckpoint, "on_epoch_end", original)
    assert cli.main(argv) == 0
    assert "(2 epochs, resumed after epoch 1," in capsys.readouterr().out


def test_missing_data_speaks_of_the_cli_flags(tmp_path, capsys, caplog):
    with caplog.at_level(logging.WARNING):
        assert cli.main(["train", "EffCapsNet", "--dataset", "mnist", "--data-dir", str(tmp_path / "nothing"), *TRAIN]) == 2
    err = capsys.readouterr().err
    assert "--download was not given" in err and "pass --data-dir FOLDER" in err and "or pass --download" in err
    assert "--dataset mnist_sample" in err and "data_dir=" not in err and "download=True" not in err
    assert not [r for r in caplog.records if r.name == "absl"]  # no TFDS warning about the missing TFDS folder


def test_evaluate_refuses_mnist_files_as_fashion_mnist_and_defaults_to_the_training_set(run, tmp_path, capsys):
    _, output, metrics = run
    model_file = str(output / "model.keras")
    mnist = tmp_path / "mnist-files"
    mnist.mkdir()
    for name in os.listdir(SAMPLE_DIR):  # the official MNIST test files
        if name.endswith(".gz"):
            shutil.copy(os.path.join(SAMPLE_DIR, name), mnist)
    capsys.readouterr()
    assert cli.main(["evaluate", model_file, "--dataset", "fashion_mnist", "--data-dir", str(mnist)]) == 2
    err = capsys.readouterr().err
    assert "is mnist's t10k-images-idx3-ubyte file, not fashion_mnist's" in err and "(sub-folder 'fashion-mnist')" in err
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


def test_explain_default_folders_do_not_collide(run, tmp_path):
    _, output, _ = run
    assert cli._explain_folder(str(output / "model.keras")) == os.path.join("runs", "explain-run")  # a train run: its folder
    (tmp_path / "model.keras").write_bytes(b"")
    assert cli._explain_folder(str(tmp_path / "model.keras")) == os.path.join("runs", "explain-model")  # not a run: the file
    assert cli._explain_folder("some/where/capsnet.keras") == os.path.join("runs", "explain-capsnet")


def test_every_subcommand_describes_itself():
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name, command in commands.items():
        assert command.description and len(command.description) > 40, name
        assert command.description.split()[0] in command.format_help(), name
