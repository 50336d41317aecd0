"""``CapsuleClassifier`` on bad input (zero examples, fractional labels) and its summary with a decoder."""

import re

import numpy as np
import pytest
import tensorflow as tf

from keras_capsules.applications import EffCapsNet


@pytest.fixture(scope="module")
def model():
    model = EffCapsNet(reconstruction=True)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _empty(images_only=False):
    """The zero-example inputs: NumPy arrays, an empty dataset, and a filtered one of unknown length."""
    x, y = np.zeros((0, 28, 28, 1), "float32"), np.zeros((0,), "int32")
    full = tf.data.Dataset.from_tensor_slices((np.zeros((3, 28, 28, 1), "float32"), np.arange(3)))
    datasets = [tf.data.Dataset.from_tensor_slices((x, y)).batch(4), full.filter(lambda image, label: label > 5).batch(4)]
    if images_only:
        return [x] + [d.map(lambda image, label: image) for d in datasets]
    return [(x, y)] + [(d, None) for d in datasets]


@pytest.mark.filterwarnings("ignore:Your input ran out of data")  # Keras, on the empty inputs
def test_predict_on_zero_examples_returns_empty_scores(model):
    for x in _empty(images_only=True):
        scores = model.predict(x, verbose=0)
        assert isinstance(scores, np.ndarray) and scores.shape == (0, 10) and scores.dtype == np.float32
    features = EffCapsNet(include_top=False).predict(np.zeros((0, 28, 28, 1), "float32"), verbose=0)
    assert features.shape == (0, 1, 1, 128)  # 16 primary capsules of 8 dimensions on a 1x1 grid


@pytest.mark.filterwarnings("ignore:Your input ran out of data")  # Keras, on the empty inputs
def test_evaluate_on_zero_examples_names_the_model(model):
    for x, y in _empty():
        with pytest.raises(ValueError, match=r"CapsuleClassifier 'eff_capsnet'\.evaluate: argument `x` expected at least one example, received zero examples"):
            model.evaluate(x, y, verbose=0)


def test_fractional_labels_are_refused_where_visible_and_whole_floats_accepted(model):
    x = np.random.default_rng(0).random((4, 28, 28, 1)).astype("float32")
    message = r"'eff_capsnet'\.{}: argument `{}` expected class indices that are whole numbers .*such as {}"
    with pytest.raises(ValueError, match=message.format("fit", "y", "2.7")):
        model.fit(x, np.array([0.0, 1.0, 2.7, 3.0]), epochs=1, verbose=0)
    with pytest.raises(ValueError, match=message.format("fit", "y", "2.5")):
        model.fit(x, np.array([[0.0], [1.0], [2.5], [3.0]]), epochs=1, verbose=0)
    with pytest.raises(ValueError, match=message.format("fit", "validation_data", "0.5")):
        model.fit(x, np.arange(4), validation_data=(x, np.array([0.5, 1, 2, 3])), epochs=1, verbose=0)
    with pytest.raises(ValueError, match=message.format("evaluate", "y", "3.3")):
        model.evaluate(x, np.array([0, 1, 2, 3.3]), verbose=0)
    history = model.fit(x, np.array([0.0, 1.0, 2.0, 3.0]), validation_data=(x, np.arange(4)), epochs=1, verbose=0)
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    loss, accuracy = model.evaluate(x, np.array([0.0, 1.0, 2.0, 3.0]), verbose=0)
    assert np.isfinite(loss) and accuracy in (0.0, 0.25, 0.5, 0.75, 1.0)


def _rows(text):
    """``(layer cell, parameter count)`` per row of a rendered summary; wrapped rows continue the previous one."""
    rows = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip("│").split("│")] if line.startswith("│") else None
        if not cells or len(cells) < 3:
            continue
        if cells[2]:
            rows.append([cells[0], int(cells[2].replace(",", ""))])
        elif rows:
            rows[-1][0] = f"{rows[-1][0]} {cells[0]}".strip()
    return rows


@pytest.mark.parametrize("options", [{}, {"show_trainable": True}])
def test_summary_rows_add_up_to_the_total_with_a_decoder_row(model, options):
    printed = []
    model.summary(print_fn=printed.append, **options)
    text = "\n".join(printed)
    rows = _rows(text)
    # Sabour's decoder on 10 x 16 class poses: Dense 160 -> 512 -> 1024 -> 784 (28 x 28 x 1).
    decoder = (160 * 512 + 512) + (512 * 1024 + 1024) + (1024 * 784 + 784)
    assert decoder == 1_411_344
    assert [name for name, count in rows if count == decoder] == ["decoder (CapsuleDecoder)"]
    assert sum(count for _, count in rows) == model.count_params() == 1_573_744
    weights = [int(n.replace(",", "")) for n in re.findall(r"(?m)^ (?:Trainable|Non-trainable) params: ([\d,]+)", text)]
    assert sum(weights) == 1_573_744  # the model's weights, whatever the optimizer adds to "Total params" after fit
