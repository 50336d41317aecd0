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
    with pytest.raises(
        ValueError,
        match=r"decode_predictions: argument `predictions` expected a 2-D array \(batch, classes\).*shape \(10,\)",
    ):
        presets.decode_predictions(SCORES[0], "fashion_mnist")
    with pytest.raises(
        ValueError, match=r"argument `predictions` expected 10 class scores per example.*shape \(2, 5\)"
    ):
        presets.decode_predictions(SCORES[:, :5], "EffCapsNet/mnist")
    with pytest.raises(ValueError, match=r"argument `dataset_or_preset` expected a dataset name.*'imagenet'"):
        presets.decode_predictions(SCORES, "imagenet")
    with pytest.raises(
        ValueError,
        match=r"argument `dataset_or_preset` expected a dataset name, one of the presets .* or a preset folder, received 'EffCapsNet/nope'",
    ):
        presets.decode_predictions(SCORES, "EffCapsNet/nope")
    with pytest.raises(ValueError, match="argument `top` expected an integer >= 1"):
        presets.decode_predictions(SCORES, "fashion_mnist", top=0)


def test_names_from_a_preset_folder_a_model_or_a_list(tmp_path):
    import hashlib
    import json

    import keras

    from keras_capsules.applications import CapsuleClassifier

    folder = tmp_path / "fashion"
    folder.mkdir()
    (folder / "model.weights.npz").write_bytes(b"stand-in: only its SHA-256 is read")
    digest = hashlib.sha256(b"stand-in: only its SHA-256 is read").hexdigest()
    (folder / "config.json").write_text(
        json.dumps(
            {"format": "keras_capsules.preset", "format_version": 1, "constructor": "FMCapsNet", "arguments": {}}
        )
    )
    (folder / "metadata.json").write_text(
        json.dumps({"weights": {"file": "model.weights.npz", "sha256": digest}, "class_names": list(FASHION)})
    )
    inputs = keras.Input((2,))
    model = CapsuleClassifier(
        inputs, keras.layers.Dense(10, name="predictions")(inputs), class_names=FASHION, name="named"
    )
    expected = [[(9, "Ankle boot", pytest.approx(0.6))], [(0, "T-shirt/top", pytest.approx(0.5))]]
    for source in (str(folder), folder, model, list(FASHION)):
        assert presets.decode_predictions(SCORES, source, top=1) == expected
    unnamed = CapsuleClassifier(inputs, keras.layers.Dense(10, name="predictions")(inputs), name="unnamed")
    with pytest.raises(
        ValueError,
        match=r"argument `dataset_or_preset` expected a model with class names .*received \"model 'unnamed' without class names\"",
    ):
        presets.decode_predictions(SCORES, unnamed)
    with pytest.raises(
        ValueError,
        match=r"argument `predictions` expected 10 class scores per example \(the classes of model 'named'\)",
    ):
        presets.decode_predictions(SCORES[:, :4], model)
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        presets.PresetFileError, match=r"decode_predictions: preset folder '.*empty' has no config\.json"
    ):
        presets.decode_predictions(SCORES, str(tmp_path / "empty"))
