"""``robustness`` on tiny models whose accuracy is known from the labels, the same images for every model, and the plots."""

import hashlib
import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import datasets
from keras_capsules.evaluation import RobustnessResult, plot_comparison, robustness, transformed_images

LIMIT = 64


@pytest.fixture(scope="module")
def sample():
    """The first images and labels of the embedded sample's test split, in [0, 1]."""
    images, labels = datasets.load_arrays("mnist_sample", "test")
    return images[:LIMIT].astype("float32") / 255.0, labels[:LIMIT]


class Record(keras.layers.Layer):
    """Passes its input through, recording a hash of every eager batch (the images a model was fed)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hashes = []

    def call(self, x):
        if tf.executing_eagerly():
            self.hashes.append(_hash(x.numpy()))
        return x


def _hash(array):
    return hashlib.sha256(np.ascontiguousarray(array, dtype="float32").tobytes()).hexdigest()


def _constant_model(size=28, recorder=None):
    """Always predicts class 0 (zero kernel, bias one-hot at 0); ``recorder`` sees its inputs."""
    inputs = keras.Input((size, size, 1))
    x = keras.layers.Flatten()(inputs if recorder is None else recorder(inputs))
    dense = keras.layers.Dense(
        10, kernel_initializer="zeros", bias_initializer=keras.initializers.Constant(np.eye(10)[0])
    )
    model = keras.Model(inputs, dense(x), name=f"constant{size}")
    if recorder is not None:
        model.compile(run_eagerly=True)
    return model


def _linear_model(kernel):
    """Predicts ``argmax(flatten(image) @ kernel)``."""
    inputs = keras.Input((28, 28, 1))
    dense = keras.layers.Dense(10, use_bias=False)
    model = keras.Model(inputs, dense(keras.layers.Flatten()(inputs)), name="linear")
    dense.set_weights([kernel])
    return model


@pytest.fixture(scope="module")
def constant_result():
    return robustness(_constant_model(), "mnist_sample", limit=LIMIT, batch_size=24)


def test_a_constant_model_scores_the_share_of_its_class_everywhere(constant_result, sample):
    share = float(np.mean(sample[1] == 0))  # 8 of the first 64 labels
    assert constant_result.accuracy == share
    assert list(constant_result.table) == ["rotation", "scale", "shear", "translation"]
    assert [m for m, _ in constant_result.table["rotation"]] == [0, 15, 30, 45, 60]
    assert [m for m, _ in constant_result.table["scale"]] == [0.6, 0.8, 1.0, 1.2, 1.4]
    for rows in constant_result.table.values():
        assert [a for _, a in rows] == [share] * 5
    assert (constant_result.examples, constant_result.seed, constant_result.padding) == (LIMIT, 0, None)


def test_identity_rows_and_a_half_turn_match_numpy(sample):
    images, labels = sample
    kernel = np.random.default_rng(1).normal(size=(784, 10)).astype("float32")
    result = robustness(
        _linear_model(kernel),
        "mnist_sample",
        limit=LIMIT,
        batch_size=40,
        transforms={"rotation": [0, 180], "scale": [1.0], "shear": [0], "translation": [0]},
    )

    def numpy_accuracy(batch):
        return float(np.mean(np.argmax(batch.reshape(len(batch), -1) @ kernel, axis=-1) == labels))

    plain = numpy_accuracy(images)
    assert 0.0 < plain < 1.0  # a random linear model: neither all right nor all wrong
    assert result.accuracy == pytest.approx(plain)
    for name in ("scale", "shear", "translation"):
        assert result.table[name] == [(pytest.approx(1.0 if name == "scale" else 0.0), pytest.approx(plain))]
    # +180 and -180 degrees are the same half turn, whatever sign each image drew.
    assert result.table["rotation"] == [
        (0.0, pytest.approx(plain)),
        (180.0, pytest.approx(numpy_accuracy(images[:, ::-1, ::-1]))),
    ]


def test_every_model_sees_the_same_images_and_the_seed_decides_them(sample):
    transforms = {"rotation": [30], "translation": [4]}
    small, large = Record(), Record()
    robustness(_constant_model(28, small), "mnist_sample", limit=LIMIT, batch_size=24, transforms=transforms, seed=5)
    result = robustness(
        _constant_model(32, large), "mnist_sample", limit=LIMIT, batch_size=24, transforms=transforms, seed=5
    )
    whole = [transformed_images(sample[0], name, m, seed=5) for name, values in transforms.items() for m in values] + [
        sample[0]
    ]

    def batch_hashes(sets, pad=0):
        sets = [np.pad(images, ((0, 0), (pad, pad), (pad, pad), (0, 0))) for images in sets]
        return [_hash(images[start : start + 24]) for images in sets for start in (0, 24, 48)]

    assert small.hashes == batch_hashes(whole)  # the table's passes in order, then the untransformed one
    assert result.padding == ((2, 2), (2, 2))
    assert large.hashes == batch_hashes(whole, pad=2)  # the 32x32 model: the same images, zero-padded by 2
    assert _hash(transformed_images(sample[0], "rotation", 30, seed=6)) != _hash(whole[0])


def test_an_evaluation_transform_follows_the_geometric_one(sample):
    recorder = Record()
    result = robustness(
        _constant_model(32, recorder),
        "mnist_sample",
        limit=16,
        batch_size=16,
        transforms={"shear": [0.3]},
        augment="glom_mnist",
    )
    sheared = transformed_images(sample[0][:16], "shear", 0.3)
    # glom_mnist's evaluation transform zero-pads 28x28 to 32x32 itself: no padding of ours on top.
    assert recorder.hashes[0] == _hash(np.pad(sheared, ((0, 0), (2, 2), (2, 2), (0, 0))))
    assert (result.padding, result.augment) == (None, "glom_mnist")
    assert "evaluation transform of augmentation preset 'glom_mnist'" in result.to_text()
    # A preset that transforms training images only (random_shift) changes nothing here, and is not named.
    shifted = robustness(
        _constant_model(28, Record()), "mnist_sample", limit=16, transforms={"shear": [0.3]}, augment="random_shift"
    )
    assert shifted.augment is None and "evaluation transform" not in shifted.to_text()


def test_each_image_draws_a_rotation_sign_and_a_translation_direction(sample):
    images = sample[0]
    turned = transformed_images(images, "rotation", 90, seed=0)
    signs = [
        [k for k in (1, -1) if np.allclose(out, np.rot90(image, k, axes=(0, 1)), atol=1e-6)]
        for image, out in zip(images, turned)
    ]
    assert all(len(sign) == 1 for sign in signs) and {sign[0] for sign in signs} == {1, -1}
    moved = transformed_images(images, "translation", 3, seed=0)
    shifts = [(0, 3), (3, 0), (0, -3), (-3, 0)]  # (dy, dx): right, down, left, up
    directions = [
        [k for k, (dy, dx) in enumerate(shifts) if np.allclose(out, _shift(image, dy, dx), atol=1e-6)]
        for image, out in zip(images, moved)
    ]
    assert all(len(d) == 1 for d in directions) and {d[0] for d in directions} == {0, 1, 2, 3}
    # An image's draw depends on its index, not on how many images are evaluated.
    np.testing.assert_array_equal(transformed_images(images[:16], "translation", 3, seed=0), moved[:16])


def _shift(image, dy, dx):
    out = np.zeros_like(image)
    height, width = image.shape[:2]
    out[max(dy, 0) : height + min(dy, 0), max(dx, 0) : width + min(dx, 0)] = image[
        max(-dy, 0) : height + min(-dy, 0), max(-dx, 0) : width + min(-dx, 0)
    ]
    return out


def test_a_keras_file_gives_the_same_table(tmp_path, constant_result):
    path = str(tmp_path / "constant.keras")
    _constant_model().save(path)
    result = robustness(path, "mnist_sample", limit=LIMIT, batch_size=24)
    assert result.model == "constant.keras"
    assert result.table == constant_result.table


def test_a_preset_by_name():
    result = robustness("effcapsnet:MNIST", "mnist_sample", limit=32, transforms={"rotation": [0, 45]})
    assert result.model == "EffCapsNet/mnist"
    assert result.table["rotation"][0][1] >= 0.9  # the preset's recorded accuracy is 99.7 %
    assert result.table["rotation"][0][1] == result.accuracy


def test_text_and_json(constant_result):
    text = constant_result.to_text()
    assert "constant28 on mnist_sample test: 64 images, seed 0" in text
    assert "rotation" in text and "60 degrees" in text and "1.4 factor" in text and "8 pixels" in text
    record = json.loads(json.dumps(constant_result.to_dict()))
    assert record["table"]["scale"][0] == [0.6, 0.125]
    assert RobustnessResult.from_dict(record) == constant_result


def test_numpy_integer_arguments_give_the_same_json_record(constant_result):
    result = robustness(
        _constant_model(), "mnist_sample", limit=np.int64(LIMIT), batch_size=np.int32(24), seed=np.uint8(0)
    )
    assert json.dumps(result.to_dict()) == json.dumps(constant_result.to_dict())  # Python ints, so JSON-serialisable
    with pytest.raises(ValueError, match=r"robustness: argument `seed` expected a non-negative integer, received True"):
        robustness(_constant_model(), "mnist_sample", limit=LIMIT, seed=True)


def test_plots(tmp_path, constant_result):
    figure = constant_result.plot(str(tmp_path / "one.png"))
    assert [ax.get_title() for ax in figure.axes] == ["rotation", "scale", "shear", "translation"]
    assert (tmp_path / "one.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    other = RobustnessResult.from_dict(dict(constant_result.to_dict(), model="other"))
    both = plot_comparison([constant_result, other])
    assert all(len(ax.get_lines()) == 2 for ax in both.axes)
    with pytest.raises(
        ValueError, match="plot_comparison: argument `results` expected results on the same transformed images"
    ):
        plot_comparison([constant_result, RobustnessResult.from_dict(dict(constant_result.to_dict(), seed=1))])


def test_plot_without_matplotlib_names_the_extra(monkeypatch, constant_result):
    monkeypatch.setitem(__import__("sys").modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r'pip install "keras-capsules\[plots\]"'):
        constant_result.plot()


def test_report_prints_and_writes(tmp_path, capsys):
    from keras_capsules.evaluation.robustness import report

    report(
        _constant_model(),
        "mnist_sample",
        limit=16,
        transforms=["scale"],
        plot=str(tmp_path / "p.png"),
        json_path=str(tmp_path / "r.json"),
    )
    assert "scale" in capsys.readouterr().out
    assert json.loads((tmp_path / "r.json").read_text())["examples"] == 16
    assert (tmp_path / "p.png").is_file()


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="robustness: argument `transforms` expected names from"):
        robustness(_constant_model(), "mnist_sample", transforms=["blur"])
    with pytest.raises(
        ValueError, match="robustness: argument `model` expected a Keras model, a .keras file or a preset MODEL/NAME"
    ):
        robustness("NoSuchModel/mnist", "mnist_sample")
    with pytest.raises(ValueError, match="robustness: argument `seed` expected a non-negative integer"):
        robustness(_constant_model(), "mnist_sample", seed=-1)
    with pytest.raises(ValueError, match=r"robustness: the model's input shape \(20, 20, 1\) does not take"):
        robustness(
            keras.Sequential([keras.Input((20, 20, 1)), keras.layers.Flatten(), keras.layers.Dense(10)]),
            "mnist_sample",
            limit=4,
        )
