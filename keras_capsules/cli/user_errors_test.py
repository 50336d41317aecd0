"""User errors (one line, status 2) against internal errors (traceback, status 1)."""

import os

from keras_capsules import cli
from keras_capsules.cli.options import key_values
from keras_capsules.cli.user_errors import is_user_error


def test_errors_exit_with_status_2_and_a_message(tmp_path, capsys):
    assert cli.main(["train", "NoSuchNet", "--output", str(tmp_path / "x")]) == 2
    assert "no recipe for model 'NoSuchNet'" in capsys.readouterr().err
    broken = tmp_path / "broken.keras"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    assert cli.main(["export", str(broken), str(tmp_path / "out")]) == 2
    assert "broken.keras" in capsys.readouterr().err and not os.path.exists(tmp_path / "out")
    assert cli.main(["train", "EffCapsNet", "--model-arg", "oops"]) == 2
    assert "--model-arg` expected KEY=VALUE" in capsys.readouterr().err


def test_an_internal_error_keeps_its_traceback_and_a_user_error_is_one_line(monkeypatch, capsys):
    from keras_capsules import recipes

    def broken(model=None):
        return len(model)  # a bug: TypeError from a wrong call, raised by no `raise` of the library

    monkeypatch.setattr(recipes, "available", broken)
    assert cli.main(["recipes"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "in broken" in err and "return len(model)" in err
    assert (
        "TypeError: object of type 'NoneType' has no len()" in err
        and "keras-capsules recipes: unexpected TypeError" in err
    )

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
        assert "Traceback (most recent call last)" in err and "in model_name" in err
        assert err.splitlines()[-1].startswith("keras-capsules recipes: error: no recipe for model 'NoSuchNet'")


def test_user_errors_are_the_librarys_raises_and_os_errors_naming_a_file():
    def raised(function):
        try:
            function()
        except Exception as error:  # noqa: BLE001
            return error
        raise AssertionError("nothing raised")

    assert is_user_error(raised(lambda: key_values(["oops"], "--model-arg")))  # a `raise` in keras_capsules
    assert is_user_error(raised(lambda: open("/no/such/file")))  # FileNotFoundError naming the file
    assert not is_user_error(raised(lambda: int("x")))  # raised outside the library
    assert not is_user_error(raised(lambda: key_values(3, "--x")))  # a bug inside it: not a `raise` statement
    assert not is_user_error(raised(lambda: 1 / 0))  # not a user-error type
