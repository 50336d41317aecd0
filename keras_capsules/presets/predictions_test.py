"""decode_predictions against hand-computed top-k lists; the names come from a dataset, a preset key or a Preset."""

import numpy as np
import pytest

from keras_capsules import presets

FASHION = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")

# Two Fashion-MNIST score rows; the top 3 by hand: row 0 -> 9 (0.6), 7 (0.2), 5 (0.1);
# row 1 -> 0 (0.5), then the tie 3 / 6 (0.2) in index order.
SCORES = np.array(
    [
        [0.0, 0.0, 0.0, 0.0, 0.05, 0.1, 0.0, 0.2, 0.05, 0.6],
        [0.5, 0.0, 0.0, 0.2, 0.0, 0.0, 0.2, 0.0, 0.1, 0.0],
    ],
    dtype="float32",
)


@pytest.mark.parametrize("source", ["fashion_mnist", "FMCapsNet/fashion_mnist", "preset"])
def test_top_k_by_hand(source):
    names_from = presets.get("FMCapsNet", "fashion_mnist") if source == "preset" else source
    decoded = presets.decode_predictions(SCORES, names_from, top=3)
    assert decoded == [
        [(9, "Ankle boot", pytest.approx(0.6)), (7, "Sneaker", pytest.approx(0.2)), (5, "Sandal", pytest.approx(0.1))],
        [(0, "T-shirt/top", pytest.approx(0.5)), (3, "Dress", pytest.approx(0.2)), (6, "Shirt", pytest.approx(0.2))],
    ]
    assert all(type(i) is int and type(s) is float for row in decoded for i, _, s in row)


def test_every_preset_carries_its_datasets_names():
    assert presets.get("FMCapsNet", "fashion_mnist").class_names == FASHION
    assert presets.get("EffCapsNet", "mnist").class_names == tuple("0123456789")


def test_top_is_capped_at_the_classes_and_numpy_integers_are_accepted():
    decoded = presets.decode_predictions(SCORES[:1], "fashion_mnist", top=np.int64(50))
    assert [i for i, _, _ in decoded[0]] == [9, 7, 5, 4, 8, 0, 1, 2, 3, 6]  # scores descending, ties by index


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"decode_predictions: argument `predictions` expected a 2-D array \(batch, classes\).*shape \(10,\)"):
        presets.decode_predictions(SCORES[0], "fashion_mnist")
    with pytest.raises(ValueError, match=r"argument `predictions` expected 10 class scores per example.*shape \(2, 5\)"):
        presets.decode_predictions(SCORES[:, :5], "EffCapsNet/mnist")
    with pytest.raises(ValueError, match=r"argument `dataset_or_preset` expected a dataset name.*'imagenet'"):
        presets.decode_predictions(SCORES, "imagenet")
    with pytest.raises(ValueError, match=r"argument `dataset_or_preset` expected a dataset name or one of the presets.*'EffCapsNet/nope'"):
        presets.decode_predictions(SCORES, "EffCapsNet/nope")
    with pytest.raises(ValueError, match="argument `top` expected an integer >= 1"):
        presets.decode_predictions(SCORES, "fashion_mnist", top=0)
