"""``keras-capsules train``: recipe overrides, one-line errors, finished runs, Ctrl-C and resumption, CLI-worded data errors."""

import logging
import os

import pytest

from keras_capsules import cli
from keras_capsules.cli.train import training_dataset
from keras_capsules.testing.tiers import large


@pytest.mark.xdist_group("cli_run")
def test_train_applies_every_override(overrides_run):
    _, metrics = overrides_run
    recipe = metrics["recipe"]
    assert (recipe["epochs"], recipe["batch_size"], recipe["learning_rate"], recipe["lr_decay"]) == (2, 16, 0.002, 0.5)
    assert recipe["augmentation"] == "mnist_shift2" and recipe["model_kwargs"] == {
        "variant": "mnist",
        "reconstruction": False,
    }
    assert (
        metrics["epochs_completed"] == 2 and metrics["steps_per_epoch"] == 6 and metrics["optimizer_iterations"] == 12
    )
    assert len(metrics["history"]["loss"]) == 2
    assert (
        metrics["validation"]["examples"] == 0 and "val_loss" not in metrics["history"]
    )  # --validation-examples 0: all 96 train
    # 12 steps reach 31.5 % on these 200 held-out images (TensorFlow 2.21, CPU); chance is 10 % (+-2.1 % std).
    assert metrics["test_accuracy"] >= 0.2


def test_without_dataset_train_trains_on_the_embedded_sample():
    assert cli.build_parser().parse_args(["train", "EffCapsNet"]).dataset is None
    assert training_dataset(None, None) == "mnist_sample"
    with pytest.raises(
        ValueError,
        match=r"train: argument `--data-dir` expected a folder of images with one subfolder per class .* received 'some/folder'",
    ):
        training_dataset(None, "some/folder")  # --data-dir alone is a folder of images: never a fall-back to the sample
    with pytest.raises(
        ValueError,
        match=r"`--image-size`, `--channels` and `--drop-empty-classes` expected --data-dir FOLDER of images",
    ):
        training_dataset("mnist", None, (32, 32))
    assert training_dataset("fashion_mnist", None) == "fashion_mnist"
    assert training_dataset("mnist", "some/folder") == "mnist"


def test_unknown_model_argument_is_one_line(tmp_path, capsys, small_training):
    assert (
        cli.main(["train", "EffCapsNet", "--output", str(tmp_path / "o"), *small_training, "--model-arg", "foo=1"]) == 2
    )
    err = capsys.readouterr().err
    assert (
        err.startswith("keras-capsules train: error: train: EffCapsNet has no constructor argument 'foo'")
        and err.count("\n") == 1
    )
    assert "routing_iterations" in err and "Traceback" not in err
    assert not os.path.exists(tmp_path / "o" / "checkpoints")  # refused before any data or model was made


@pytest.mark.xdist_group("cli_usage")
def test_rerunning_a_finished_train_reports_the_stored_result(lower_case_run, capsys):
    argv, output, metrics = lower_case_run
    before = (output / "metrics.json").read_text()
    capsys.readouterr()
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "this run was already complete (1 epoch)" in out and "resumed" not in out
    assert f"accuracy {metrics['evaluations']['test']['accuracy']:.4f}" in out
    assert (output / "metrics.json").read_text() == before  # nothing retrained or rewritten


@large
def test_ctrl_c_stops_cleanly_and_the_same_command_resumes(tmp_path, monkeypatch, capsys, small_training):
    from keras_capsules.training.checkpoints import EpochCheckpoint

    original = EpochCheckpoint.on_epoch_end

    def interrupt_after_first_epoch(self, epoch, logs=None):
        original(self, epoch, logs)
        raise KeyboardInterrupt  # what Ctrl-C raises in the main thread

    argv = ["train", "EffCapsNet", "--output", str(tmp_path / "run"), *small_training]
    argv[argv.index("--epochs") + 1] = "2"
    monkeypatch.setattr(EpochCheckpoint, "on_epoch_end", interrupt_after_first_epoch)
    assert cli.main(argv) == 130
    err = capsys.readouterr().err
    assert err.strip() == "keras-capsules train: stopped; run the same command to resume."
    assert sorted(os.listdir(tmp_path / "run" / "checkpoints"))[-1] == "epoch-0001"
    monkeypatch.setattr(EpochCheckpoint, "on_epoch_end", original)
    assert cli.main(argv) == 0
    assert "(2 epochs, resumed after epoch 1," in capsys.readouterr().out


def test_missing_data_speaks_of_the_cli_flags(tmp_path, capsys, caplog, small_training):
    with caplog.at_level(logging.WARNING):
        assert (
            cli.main(
                ["train", "EffCapsNet", "--dataset", "mnist", "--data-dir", str(tmp_path / "nothing"), *small_training]
            )
            == 2
        )
    err = capsys.readouterr().err
    assert "--download was not given" in err and "pass --data-dir FOLDER" in err and "or pass --download" in err
    assert "--dataset mnist_sample" in err and "data_dir=" not in err and "download=True" not in err
    assert not [r for r in caplog.records if r.name == "absl"]  # no TFDS warning about the missing TFDS folder


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "dry"
    assert cli.main(["train", "EffCapsNet", "--dry-run", "--batch-size", "8", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Training plan: model 'eff_capsnet' on 28x28x1 inputs at batch 8, Adam" in printed
    assert "parameters: 1,573,744" in printed  # 161,824 trainable + 576 batch-norm statistics + the decoder's 1,411,344
    assert "steps per epoch: 900" in printed  # 8,000 sample images less the 800 held out, at batch 8
    assert "Dry run: nothing trained or written." in printed and not out.exists()
    assert "rematerialisation: off" in printed  # about 1 GB: far under three quarters of the memory available
    assert cli.main(["train", "EffCapsNet", "--dry-run", "--recompute", "on", "--output", str(out)]) == 0
    assert "rematerialisation" not in capsys.readouterr().out


def test_max_memory_refuses_a_batch_that_does_not_fit(tmp_path, capsys):
    code = cli.main(["train", "EffCapsNet", "--max-memory", "100MB", "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert (
        "training model 'eff_capsnet' on 28x28x1 inputs at batch 16 needs about" in err
        and "more than the limit of 100 MB" in err
    )
    assert "No batch fits, not even 1" in err and not (tmp_path / "o" / "checkpoints").exists()
