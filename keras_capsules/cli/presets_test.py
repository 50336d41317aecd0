"""``keras-capsules presets``: the table of pretrained weights, its columns aligned."""

from keras_capsules import cli


def test_presets_table_columns_line_up(capsys):
    from keras_capsules import presets

    assert cli.main(["presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    keys = presets.available()
    assert len(lines) == 1 + len(keys)
    # The first column is as wide as the longest `Model(weights='name')`; the accuracy column ends at one place.
    first = max(len(f"{key.split('/')[0]}(weights={key.split('/')[1]!r})") for key in keys)
    accuracy_end = first + 2 + len("test accuracy")
    assert (
        lines[0][: first + 2] == "weights=".ljust(first + 2) and lines[0][first + 2 : accuracy_end] == "test accuracy"
    )
    for line, key in zip(lines[1:], keys):
        model, name = key.split("/")
        assert line.startswith(f"{model}(weights={name!r})".ljust(first + 2)), line
        assert line[accuracy_end - 1] == "%" and line[accuracy_end] == " ", line
    dataset_starts = {
        line.index(presets.get(*key.split("/")).dataset, accuracy_end) for line, key in zip(lines[1:], keys)
    }
    assert dataset_starts == {lines[0].index("dataset")}
