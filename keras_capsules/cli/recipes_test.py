"""``keras-capsules recipes``: one model's recipes as ``train`` flags."""

from keras_capsules import cli


def test_recipes_listing(capsys):
    assert cli.main(["recipes", "MatrixCapsNet"]) == 0
    out = capsys.readouterr().out
    assert "--recipe novel_azimuth" in out and "EffCapsNet" not in out
