"""``CapsuleClassifier`` on bad input (zero examples, fractional labels, labels outside the classes), its summary with a decoder, and its class names and constructor record."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_capsules.applications import CapsuleClassifier, EffCapsNet
from keras_capsules.testing.tiers import large


@pytest.fixture(scope="module")
def model():
    model = EffCapsNet(reconstruction=True)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _empty(images_only=False):
    """The zero-example inputs: NumPy arrays, an empty dataset, and a filtered one of unknown length."""
    x, y = np.zeros((0, 28, 28, 1), "float32"), np.zeros((0,), "int32")
    full = tf.data.Dataset.from_tensor_slices((np.zeros((3, 28, 28, 1), "float32"), np.arange(3)))
    datasets = [
        tf.data.Dataset.from_tensor_slices((x, y)).batch(4),
        full.filter(lambda image, label: label > 5).batch(4),
    ]
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
        with pytest.raises(
            ValueError,
            match=r"CapsuleClassifier 'eff_capsnet'\.evaluate: argument `x` expected at least one example, received zero examples",
        ):
            model.evaluate(x, y, verbose=0)


@large
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


@large
def test_labels_outside_the_classes_are_refused_and_the_last_class_trains(model):
    x = np.random.default_rng(1).random((8, 28, 28, 1)).astype("float32")
    expected = r"CapsuleClassifier 'eff_capsnet'\.{}: argument `{}` expected class indices in 0\.\.9 \(10 classes\), received '{}'"
    high = expected.format(
        "fit", "y", r"8 of 8 label\(s\), values 10(\.0)?, 11(\.0)?, 12(\.0)?, 13(\.0)?, 14(\.0)?, \.\.\."
    )  # floats: 10.0
    for labels in (
        np.arange(10, 18),
        list(range(10, 18)),
        tf.constant(np.arange(10, 18)),
        np.arange(10, 18.0).reshape(8, 1),
    ):
        with pytest.raises(ValueError, match=high):
            model.fit(x, labels, epochs=1, verbose=0)
    negative = np.array([0, 1, 2, -1, 4, 5, 6, 7])
    with pytest.raises(ValueError, match=expected.format("fit", "validation_data", r"1 of 8 label\(s\), values -1")):
        model.fit(x, np.arange(8), validation_data=(x, negative), epochs=1, verbose=0)
    with pytest.raises(ValueError, match=expected.format("evaluate", "y", r"1 of 8 label\(s\), values -1")):
        model.evaluate(x, negative, verbose=0)
    with pytest.raises(
        ValueError, match=expected.format("evaluate", "y", r"8 of 8 label\(s\), values 10, 11, 12, 13, 14, \.\.\.")
    ):
        model.evaluate(x, np.arange(10, 18), verbose=0)
    # 9, the last class, is valid: one step on the 8 images trains to a finite loss.
    history = model.fit(x, np.full(8, 9), batch_size=8, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_multi_hot_and_single_unit_targets_are_not_class_indices():
    inputs = keras.Input((4,))
    x = np.ones((4, 4), "float32")
    three = CapsuleClassifier(
        inputs, keras.layers.Dense(3, activation="sigmoid", name="predictions")(inputs), name="three"
    )
    three.compile(optimizer="adam", loss="binary_crossentropy")
    multi_hot = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1], [1, 1, 1]], "float32")  # (N, classes): not checked
    assert np.isfinite(three.evaluate(x, multi_hot, verbose=0))
    with pytest.raises(
        ValueError,
        match=r"'three'\.evaluate: argument `y` expected class indices in 0\.\.2 \(3 classes\), received '1 of 4 label\(s\), values 3'",
    ):
        three.evaluate(x, np.array([0, 1, 2, 3]), verbose=0)
    one = CapsuleClassifier(inputs, keras.layers.Dense(1, activation="sigmoid", name="predictions")(inputs), name="one")
    one.compile(optimizer="adam", loss="binary_crossentropy")
    assert np.isfinite(
        one.evaluate(x, np.array([0, 1, 1, 0]), verbose=0)
    )  # 0/1 targets of one unit, not indices of one class


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


def test_class_names_and_the_constructor_travel_in_the_keras_file(tmp_path):
    from keras_capsules import saving

    model = EffCapsNet(classes=3, class_capsule_dim=4)
    assert model.class_names is None and model.constructor["name"] == "EffCapsNet"
    model.class_names = ["cat", "dog", "bird"]  # a list is kept as a tuple
    assert model.class_names == ("cat", "dog", "bird")
    saving.save_model(model, str(tmp_path / "named.keras"))
    loaded = saving.load_model(str(tmp_path / "named.keras"))
    assert loaded.class_names == ("cat", "dog", "bird") and loaded.constructor == model.constructor
    assert loaded.constructor["arguments"]["class_capsule_dim"] == 4
    x = np.random.default_rng(2).random((2, 28, 28, 1)).astype("float32")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    # A file saved before the keys existed: a config without them loads with no names and no record.
    config = model.get_config()
    del config["class_names"], config["constructor"]
    old = CapsuleClassifier.from_config(config)
    assert old.class_names is None and old.constructor is None


def test_class_names_are_checked_against_the_classes():
    inputs = keras.Input((4,))
    model = CapsuleClassifier(
        inputs, keras.layers.Dense(3, name="predictions")(inputs), class_names=("a", "b", "c"), name="three"
    )
    assert model.class_names == ("a", "b", "c")
    with pytest.raises(
        ValueError,
        match=r"CapsuleClassifier 'three': argument `class_names` expected 3 names \(one per output unit of the model: its classes\), received \['a', 'b'\]",
    ):
        model.class_names = ("a", "b")
    with pytest.raises(
        TypeError,
        match=r"CapsuleClassifier 'three': argument `class_names` expected None or a sequence of strings \(one per class\), received 'abc'",
    ):
        model.class_names = "abc"
    with pytest.raises(
        TypeError,
        match=r"argument `class_names` expected a sequence of strings \(one per class\), received 'an item 2 of type int'",
    ):
        model.class_names = ("a", "b", 2)
    with pytest.raises(ValueError, match=r"CapsuleClassifier 'four': argument `class_names` expected 3 names"):
        CapsuleClassifier(
            inputs, keras.layers.Dense(3, name="predictions")(inputs), class_names=("a", "b", "c", "d"), name="four"
        )
    assert model.class_names == ("a", "b", "c")  # a refused value leaves the names as they were
    model.class_names = None
    assert model.class_names is None
    # Without a (batch, classes) output the number of classes is unknown: any names are kept.
    grid = CapsuleClassifier(inputs, keras.layers.Reshape((2, 2))(inputs), class_names=("x",), name="grid")
    assert grid.class_names == ("x",)


def _counting_steps(model):
    """Records each trace of the model's training and test steps (Python runs a step's body only when tracing it)."""
    traced = []
    train_step, test_step = model.train_step, model.test_step
    model.train_step = lambda data: traced.append("train") or train_step(data)
    model.test_step = lambda data: traced.append("test") or test_step(data)
    return traced


@pytest.mark.parametrize("entry", ["fit", "train_on_batch"])
def test_the_first_training_step_is_traced_once(entry):
    # Keras's TensorFlow trainer creates the optimizer's and the metrics' variables while it traces the first
    # step unless a distribution strategy is set, and TensorFlow traces a function that creates variables twice.
    model = EffCapsNet(reconstruction=True)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    traced = _counting_steps(model)
    x, y = np.random.default_rng(0).uniform(size=(16, 28, 28, 1)).astype("float32"), np.arange(16) % 10
    if entry == "fit":
        data = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
        history = model.fit(data, validation_data=data, epochs=2, verbose=0)
        losses = history.history["loss"]
        assert traced == ["train", "test"]
    else:
        builds = []
        symbolic_build = model._symbolic_build
        model._symbolic_build = lambda **kwargs: builds.append(1) or symbolic_build(**kwargs)
        losses = [model.train_on_batch(x, y)[0] for _ in range(3)]
        # Built before the first call only: a symbolic pass on every call would cost each step a traced forward pass.
        assert traced == ["train"] and len(builds) == 1
    # Every layer is built (Keras's other backends re-run a symbolic forward pass before each train_on_batch
    # while one is not), every trainable variable has its two Adam moments, and the two steps trained.
    assert [layer.name for layer in model._flatten_layers() if not layer.built] == []
    assert len(model.optimizer.variables) == 2 + 2 * len(model.trainable_variables)
    assert np.all(np.isfinite(losses)) and losses[1] < losses[0]


def test_evaluate_alone_does_not_allocate_the_optimizers_state():
    # Creating the training state ahead of the first trace is for fit and train_on_batch only: an evaluation of
    # a compiled model keeps Adam's moments unallocated (Keras's own behaviour).
    model = EffCapsNet()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = np.random.default_rng(0).uniform(size=(8, 28, 28, 1)).astype("float32"), np.arange(8) % 10
    loss, accuracy = model.evaluate(x, y, verbose=0)
    assert not model.optimizer.built and np.isfinite(loss) and 0 <= accuracy <= 1
