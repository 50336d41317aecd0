"""``keras-capsules robustness``: a preset's accuracy per transform magnitude, printed and written as JSON."""

import json

from keras_capsules import cli


def test_robustness_command_prints_the_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert (
        cli.main(
            [
                "robustness",
                "effcapsnet/MNIST",
                "--dataset",
                "mnist_sample",
                "--limit",
                "16",
                "--transform",
                "scale",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    record = json.loads(out.read_text())
    assert (record["model"], record["examples"], list(record["table"])) == ("EffCapsNet/mnist", 16, ["scale"])
    # Every magnitude of the table is printed, with its accuracy as a multiple of 1/16.
    for magnitude, accuracy in record["table"]["scale"]:
        assert abs(accuracy * 16 - round(accuracy * 16)) < 1e-6
    assert "scale" in printed and len(record["table"]["scale"]) == 5
