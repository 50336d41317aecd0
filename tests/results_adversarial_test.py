"""tools/results/adversarial.py: slices of a test set merged into one record."""

import functools
import json
import os

import pytest
from repo_scripts import load_script

adversarial = load_script("tools/results/adversarial.py")


def _slice(start, end, accuracy, table, zero_gradient, seconds, seed, **extra):
    return {
        "model": "M/mnist",
        "attack": "pgd",
        "examples": end - start,
        "accuracy": accuracy,
        "table": [[0.1, table[0]], [0.3, table[1]]],
        "zero_gradient": zero_gradient,
        "seed": seed,
        "seconds": seconds,
        "images": [start, end],
        "host": "H",
        "date": "2026-12-04",
        "commit": "abc",
        **extra,
    }


def test_slices_merge_weighted_by_images():
    slices = [
        _slice(0, 1000, 0.9, (0.5, 0.1), [0.2, 0.0], 100.0, 0),
        _slice(1000, 1500, 0.6, (0.2, 0.4), [0.8, 0.6], 50.5, 1, paused_seconds=7, date="2026-12-05", commit="def"),
    ]
    merged = adversarial.merge_slices(slices)
    # by hand: (1000 * a + 500 * b) / 1500
    assert merged["examples"] == 1500
    assert merged["accuracy"] == pytest.approx(0.8)
    assert merged["table"] == [[0.1, pytest.approx(0.4)], [0.3, pytest.approx(0.2)]]
    assert merged["zero_gradient"] == [pytest.approx(0.4), pytest.approx(0.2)]
    assert merged["seconds"] == 150.5 and merged["paused_seconds"] == 7
    assert merged["seed"] == [0, 1] and merged["slices"] == [[0, 1000], [1000, 1500]]
    assert merged["date"] == "2026-12-04; 2026-12-05" and merged["commit"] == "abc; def" and merged["host"] == "H"
    assert "images" not in merged and "note" not in merged
    slices[1]["note"] = "paused"
    assert adversarial.merge_slices(slices)["note"] == "images 1000-1500: paused"


def test_slices_must_be_consecutive_from_the_first_image():
    gap = [_slice(0, 1000, 0.9, (0.5, 0.1), [0, 0], 1.0, 0), _slice(2000, 3000, 0.9, (0.5, 0.1), [0, 0], 1.0, 2)]
    with pytest.raises(ValueError, match="not consecutive"):
        adversarial.merge_slices(gap)
    mixed = [
        _slice(0, 1000, 0.9, (0.5, 0.1), [0, 0], 1.0, 0, cumulative=True),
        _slice(1000, 2000, 0.9, (0.5, 0.1), [0, 0], 1.0, 1),
    ]
    with pytest.raises(ValueError, match="cumulative over the epsilons and per epsilon do not merge"):
        adversarial.merge_slices(mixed)
    assert adversarial.merge_slices(mixed[:1])["cumulative"]
    assert not adversarial.merge_slices([_slice(0, 1000, 0.9, (0.5, 0.1), [0, 0], 1.0, 0)])["cumulative"]


def _linear_test_set(tmp_path, monkeypatch, seed):
    """``(adversarial_accuracy module, model, x, y)``: a 3-class linear model and 10 random images, which the
    script reads as its test set; its records go to ``tmp_path``."""
    import importlib

    import keras
    import numpy as np

    # the modules, which keras_capsules.evaluation's functions of the same names shadow
    accuracy_module = importlib.import_module("keras_capsules.evaluation.adversarial_accuracy")
    robustness = importlib.import_module("keras_capsules.evaluation.robustness")
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(size=(10, 4, 4, 1)).astype("float32"), rng.integers(0, 3, 10)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4, 4, 1)), keras.layers.Flatten(), keras.layers.Dense(3)])
    monkeypatch.setattr(adversarial, "RECORDS", str(tmp_path))
    monkeypatch.setattr(robustness, "_load_images", lambda dataset, split, limit, data_dir, download: (x, y))
    return accuracy_module, model, x, y


def test_sliced_measurement_merges_to_the_whole_set_and_resumes(tmp_path, monkeypatch):
    """FGSM (no random draw) over 10 images in slices of 4 gives the accuracies of one call over all 10."""
    adversarial_accuracy, model, x, y = _linear_test_set(tmp_path, monkeypatch, 0)
    EPSILONS = adversarial_accuracy.EPSILONS

    def sliced():
        return adversarial._measure_slices(
            model, "mnist", "fgsm", "m-fgsm", "cross_entropy", "test", None, None, 5, 4, "command"
        )

    merged = adversarial.merge_slices(sliced())
    whole = adversarial_accuracy.adversarial_accuracy(model, x, y, "fgsm", EPSILONS, loss="cross_entropy")
    assert merged["slices"] == [[0, 4], [4, 8], [8, 10]] and merged["examples"] == 10
    assert merged["accuracy"] == pytest.approx(whole.accuracy)
    assert [a for _, a in merged["table"]] == pytest.approx([a for _, a in whole.table])
    files = sorted(p.name for p in (tmp_path / "slices" / "m-fgsm").iterdir())
    assert files == ["000000-000004.json", "000004-000008.json", "000008-000010.json"]
    monkeypatch.setattr(adversarial_accuracy, "adversarial_accuracy", lambda *a, **k: pytest.fail("measured again"))
    assert adversarial.merge_slices(sliced()) == merged  # every slice read back from its file


def test_pgd_slices_are_cumulative_and_a_slice_measured_per_epsilon_is_measured_again(tmp_path, monkeypatch):
    accuracy_module, model, _, _ = _linear_test_set(tmp_path, monkeypatch, 1)
    earlier = tmp_path / "slices" / "m-pgd" / "000000-000004.json"
    earlier.parent.mkdir(parents=True)
    earlier.write_text(json.dumps(_slice(0, 4, 0.5, (0.5, 0.5), [0, 0], 1.0, 0)))  # per epsilon: no "cumulative"
    asked, measure, opened = [], accuracy_module.adversarial_accuracy, []
    monkeypatch.setattr(
        accuracy_module,
        "adversarial_accuracy",
        lambda *a, **k: asked.append((a[0], k["cumulative"])) or measure(*a, **k),
    )
    open_model = functools.cache(lambda: opened.append(1) or model)  # as measure() opens a preset: once
    for attack in ("pgd", "fgsm"):
        records = adversarial._measure_slices(
            "M/mnist", "mnist", attack, f"m-{attack}", "cross_entropy", "test", None, None, 5, 4, "command", open_model
        )
        assert [r["cumulative"] for r in records] == [attack == "pgd"] * 3
        assert {r["model"] for r in records} == {"M/mnist"}  # named by the key, not the model's Keras name
    assert asked == [(model, True)] * 3 + [(model, False)] * 3  # the earlier per-epsilon slice was measured again
    assert opened == [1]  # one model for both attacks and all six slices (its traced gradient reused)
    merged = adversarial.merge_slices(
        [json.loads((tmp_path / "slices" / "m-pgd" / f).read_text()) for f in sorted(os.listdir(earlier.parent))]
    )
    accuracies = [merged["accuracy"]] + [a for _, a in merged["table"]]
    assert accuracies == sorted(accuracies, reverse=True)  # cumulative: never rises with epsilon


def _record(model, attack, cumulative=None, loss_source="recipe"):
    record = {
        "model": model,
        "attack": attack,
        "dataset": "mnist",
        "examples": 10000,
        "accuracy": 0.99,
        "table": [[0.1, 0.5], [0.3, 0.1]],
        "zero_gradient": [0.0, 0.0],
        "loss": "margin",
        "loss_source": loss_source,
        "seconds": 10.0,
        "host": "H",
    }
    return record if cumulative is None else {**record, "cumulative": cumulative}


@pytest.mark.parametrize(
    "pgd_cumulative, expected",
    [
        ((True, True), "FGSM columns: each epsilon on its own. PGD columns: cumulative over the epsilons, an image"),
        ((None, None), "FGSM and PGD columns: each epsilon on its own. Images"),
        ((True, None), "attacks only the images still standing); except the rows of `B/mnist`, measured earlier"),
    ],
)
def test_the_tables_note_says_which_pgd_rows_are_cumulative(tmp_path, monkeypatch, pgd_cumulative, expected):
    monkeypatch.setattr(adversarial, "RECORDS", str(tmp_path))
    for model, cumulative in zip(("A/mnist", "B/mnist"), pgd_cumulative):
        stem = model.lower().replace("/", "-")
        (tmp_path / f"{stem}-fgsm.json").write_text(json.dumps(_record(model, "fgsm")))
        (tmp_path / f"{stem}-pgd.json").write_text(json.dumps(_record(model, "pgd", cumulative)))
    assert expected in adversarial.table()


def test_without_tensorflow_the_test_set_is_read_from_the_idx_files(tmp_path, monkeypatch):
    """An accelerator machine with JAX or PyTorch alone: the IDX files' bytes / 255 and their labels, first LIMIT."""
    import gzip

    import numpy as np

    pixels = np.arange(3 * 28 * 28, dtype=np.uint8).reshape(3, 28, 28)  # 0..255 repeated
    folder = tmp_path / "fashion-mnist"
    folder.mkdir()
    with gzip.open(folder / "t10k-images-idx3-ubyte.gz", "wb") as handle:
        handle.write(bytes([0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 28, 0, 0, 0, 28]) + pixels.tobytes())
    with gzip.open(folder / "t10k-labels-idx1-ubyte.gz", "wb") as handle:
        handle.write(bytes([0, 0, 8, 1, 0, 0, 0, 3]) + bytes([7, 0, 9]))
    monkeypatch.setattr(adversarial, "_has_tensorflow", lambda: False)

    images, labels = adversarial._test_images("fashion_mnist", 2, str(tmp_path))
    assert images.shape == (2, 28, 28, 1) and images.dtype == np.float32
    np.testing.assert_allclose(images[1, 0, :3, 0], [(784 % 256) / 255, (785 % 256) / 255, (786 % 256) / 255])
    assert labels.tolist() == [7, 0]
    with pytest.raises(SystemExit, match="no mnist test set"):
        adversarial._test_images("mnist", None, str(tmp_path))
    with pytest.raises(SystemExit):  # the whole set read without slices needs TensorFlow's readers
        adversarial.main([str(tmp_path), "--records", str(tmp_path / "records")])


def test_table_names_each_attacks_image_count_while_a_model_is_half_measured(tmp_path, monkeypatch):
    monkeypatch.setattr(adversarial, "RECORDS", str(tmp_path))

    def write(name, attack, examples):
        record = {
            **_slice(0, examples, 0.99, (0.5, 0.25), [0.1, 0.0], 10.0, 0),
            "attack": attack,
            "dataset": "mnist",
            "loss": "margin",
            "loss_source": "training",
            "cumulative": True,
        }
        (tmp_path / f"{name}.json").write_text(json.dumps(record))

    write("m-fgsm", "fgsm", 10000)
    write("m-pgd", "pgd", 1000)
    half = adversarial.table()
    row = next(line for line in half.splitlines() if line.startswith("| `M/mnist`"))
    assert [cell.strip() for cell in row.split("|")[3:5]] == ["10,000 / 1,000", "99.0"]
    assert "the first is FGSM's images (and the clean accuracy's), the second PGD's" in half
    write("m-pgd", "pgd", 10000)
    whole = adversarial.table()
    row = next(line for line in whole.splitlines() if line.startswith("| `M/mnist`"))
    assert row.split("|")[3].strip() == "10,000" and "two counts" not in whole
