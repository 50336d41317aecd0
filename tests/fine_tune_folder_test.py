"""benchmarks/fine_tune_folder.py: the folder it writes and the validation curve it records."""

import os

import numpy as np
import pytest

from benchmarks import fine_tune_folder as bench


def test_first_per_class_takes_each_class_in_file_order():
    labels = np.array([2, 0, 1, 0, 2, 1, 0, 1, 2, 2])
    # class 0 at 1, 3, 6; class 1 at 2, 5, 7; class 2 at 0, 4, 8, 9.
    assert bench.first_per_class(labels, 2, 3).tolist() == [1, 3, 2, 5, 0, 4]
    with pytest.raises(ValueError, match="class 0 has 3 examples, fewer than --per-class 4"):
        bench.first_per_class(labels, 4, 3)


def test_written_split_reads_back_with_its_classes_and_pixels(tmp_path):
    from keras_capsules import datasets

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(6, 5, 7, 1), dtype=np.uint8)
    labels = np.array([0, 0, 1, 1, 2, 2])
    names = ("T-shirt/top", "Bag", "Coat")
    bench.write_split(str(tmp_path / "x"), images, labels, names)
    # Folders sorted by name: "Bag" (1), "Coat" (2), "T-shirt or top" (0); files by index within the split.
    assert sorted(os.listdir(tmp_path / "x")) == ["Bag", "Coat", "T-shirt or top"]
    info = datasets.register_folder(str(tmp_path / "x"))
    read, read_labels = datasets.load_arrays(info.name, "train")
    assert info.class_names == ("Bag", "Coat", "T-shirt or top")
    order = [2, 3, 4, 5, 0, 1]
    np.testing.assert_array_equal(read, images[order])
    assert read_labels.tolist() == [0, 0, 1, 1, 2, 2]


def test_validation_curve_joins_the_stages_in_order():
    metrics = {
        "stages": [{"name": "frozen_backbone", "epochs": 2}, {"name": "fine_tune", "epochs": 1}],
        "history": {
            "frozen_backbone_val_accuracy": [0.5, 0.61234],
            "val_accuracy": [0.7],
            "frozen_backbone_accuracy": [0.1, 0.2],
        },
    }
    assert bench.validation_curve(metrics) == [0.5, 0.6123, 0.7]
    assert bench.validation_curve({"stages": None, "history": {"val_accuracy": [0.25, 0.5]}}) == [0.25, 0.5]
