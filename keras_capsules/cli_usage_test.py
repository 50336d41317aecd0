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
    assert "this run was already complete (1 epoch)" in out and "resumed" not in out
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


def _options(parser):
    """``(command, option action)`` of every optional argument of every subcommand and of the main parser."""
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name, command in [("keras-capsules", parser), *commands.items()]:
        for action in command._actions:
            if action.option_strings and action.dest not in ("help", "version"):
                yield name, action


def test_every_option_states_its_default_and_numbers_their_unit():
    units = ("epochs", "epoch", "images", "steps", "trials", "levels", "classes", "iterations", "seed", "factor", "rate", "coefficient")
    for name, action in _options(cli.build_parser()):
        flag = f"{name} {action.option_strings[-1]}"
        assert action.help and "(default: " in action.help, flag
        if action.type in (int, float) or getattr(action.type, "__name__", None) in ("int", "float", "_positive_int"):
            words = f"{action.metavar or ''} {action.help}".lower()
            assert any(unit in words for unit in units), flag


def test_recipe_flags_cover_every_recipe_field_with_its_type():
    import dataclasses
    import typing

    from keras_capsules.recipes import Recipe

    hints = typing.get_type_hints(Recipe)
    fields = {field.name for field in dataclasses.fields(Recipe)}
    assert set(cli.RECIPE_FLAGS) | set(cli.RECIPE_FIELDS_WITHOUT_FLAG) == fields  # a new field needs a flag or a reason
    assert not set(cli.RECIPE_FLAGS) & set(cli.RECIPE_FIELDS_WITHOUT_FLAG)
    for field, (kind, _, _) in cli.RECIPE_FLAGS.items():
        declared = [t for t in typing.get_args(hints[field]) if t is not type(None)] or [hints[field]]
        assert (tuple if getattr(kind, "__origin__", None) is tuple else kind) is declared[0], field
        assert (type(None) in typing.get_args(hints[field])) == (field in cli.OPTIONAL_RECIPE_FLAGS), field  # 'none' accepted


def test_presets_table_columns_line_up(capsys):
    from keras_capsules import presets

    assert cli.main(["presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    keys = presets.available()
    assert len(lines) == 1 + len(keys)
    # The first column is as wide as the longest `Model(weights='name')`; the accuracy column ends at one place.
    first = max(len(f"{key.split('/')[0]}(weights={key.split('/')[1]!r})") for key in keys)
    accuracy_end = first + 2 + len("test accuracy")
    assert lines[0][: first + 2] == "weights=".ljust(first + 2) and lines[0][first + 2 : accuracy_end] == "test accuracy"
    for line, key in zip(lines[1:], keys):
        model, name = key.split("/")
        assert line.startswith(f"{model}(weights={name!r})".ljust(first + 2)), line
        assert line[accuracy_end - 1] == "%" and line[accuracy_end] == " ", line
    dataset_starts = {line.index(presets.get(*key.split("/")).dataset, accuracy_end) for line, key in zip(lines[1:], keys)}
    assert dataset_starts == {lines[0].index("dataset")}


def test_version_is_the_installed_distributions(capsys):
    from importlib import metadata

    with pytest.raises(SystemExit) as exit:
        cli.main(["--version"])
    assert exit.value.code == 0 and capsys.readouterr().out == f"keras-capsules {metadata.version('keras-capsules')}\n"


def test_an_internal_error_keeps_its_traceback_and_a_user_error_is_one_line(monkeypatch, capsys):
    from keras_capsules import recipes

    def broken(model=None):
        return len(model)  # a bug: TypeError from a wrong call, raised by no `raise` of the library

    monkeypatch.setattr(recipes, "available", broken)
    assert cli.main(["recipes"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "in broken" in err and "return len(model)" in err
    assert "TypeError: object of type 'NoneType' has no len()" in err and "keras-capsules recipes: unexpected TypeError" in err

    def missing_module(model=None):
        import keras_capsules.no_such_module  # noqa: F401  (an ImportError of a broken install)

    monkeypatch.setattr(recipes, "available", missing_module)
    assert cli.main(["recipes"]) == 1
    assert "ModuleNotFoundError: No module named 'keras_capsules.no_such_module'" in capsys.readouterr().err
    monkeypatch.undo()

    # A user error: the library's own message on one line; with --verbose (before or after the command) its traceback too.
    assert cli.main(["recipes", "NoSuchNet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("keras-capsules recipes: error: no recipe for model 'NoSuchNet'") and err.count("\n") == 1
    for argv in (["--verbose", "recipes", "NoSuchNet"], ["recipes", "NoSuchNet", "--verbose"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "Traceback (most recent call last)" in err and "in _model_name" in err
        assert err.splitlines()[-1].startswith("keras-capsules recipes: error: no recipe for model 'NoSuchNet'")


def test_user_errors_are_the_librarys_raises_and_os_errors_naming_a_file():
    def raised(function):
        try:
            function()
        except Exception as error:  # noqa: BLE001
            return error
        raise AssertionError("nothing raised")

    assert cli.is_user_error(raised(lambda: cli._key_values(["oops"], "--model-arg")))  # a `raise` in keras_capsules
    assert cli.is_user_error(raised(lambda: open("/no/such/file")))  # FileNotFoundError naming the file
    assert not cli.is_user_error(raised(lambda: int("x")))  # raised outside the library
    assert not cli.is_user_error(raised(lambda: cli._key_values(3, "--x")))  # a bug inside it: not a `raise` statement
    assert not cli.is_user_error(raised(lambda: 1 / 0))  # not a user-error type


def test_the_cuda_builds_no_driver_line_is_dropped_only_without_a_driver(monkeypatch):
    line = "E0000 00:00:1795735104.529952   24332 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n"
    other_error = "E0000 00:00:1795735104.529952   24332 some_kernel.cc:12] out of memory\n"
    exists = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda path: False if path == "/proc/driver/nvidia" else exists(path))
    assert cli._dropped(line) and not cli._dropped(other_error)
    monkeypatch.setattr(os.path, "exists", lambda path: True if path == "/proc/driver/nvidia" else exists(path))
    assert not cli._dropped(line)  # with a driver loaded, a failing cuInit is news
