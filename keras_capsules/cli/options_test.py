"""What the commands share: model names in any case, with a suggestion for a misspelt one."""

import pytest

from keras_capsules import cli


@pytest.mark.xdist_group("cli_usage")
def test_model_names_are_case_insensitive_with_a_suggestion(lower_case_run, capsys, small_training):
    _, _, metrics = lower_case_run
    assert metrics["model"] == "EffCapsNet" and metrics["epochs_completed"] == 1
    capsys.readouterr()
    assert cli.main(["recipes", "matrixcapsnet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith("MatrixCapsNet ") for line in lines)
    assert cli.main(["train", "EfCapsNet", *small_training]) == 2
    err = capsys.readouterr().err
    assert "no recipe for model 'EfCapsNet'. Did you mean 'EffCapsNet'?" in err and err.count("\n") == 1
    assert cli.main(["tune", "Capsnett"]) == 2
    assert "Did you mean 'CapsNet'?" in capsys.readouterr().err
