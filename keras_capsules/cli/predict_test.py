"""``keras-capsules predict`` on files written here: a small .keras model, PNG and .npy images, and a preset on real MNIST."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import cli, datasets

FASHION = datasets.class_names("fashion_mnist")
# Under pytest-xdist (--dist loadgroup) the module-scoped model is built once: every test here on one worker.
pytestmark = pytest.mark.xdist_group("cli_predict")


def parse(out):
    """``{label: [(score, class index, name), ...]}`` from predict's output."""
    result, label = {}, None
    for line in out.splitlines():
        if not line.startswith("  "):
            label = line
            result[label] = []
        else:
            score, index, name = line.split(maxsplit=2)
            result[label].append((float(score), int(index), name))
    return result


def write_png(path, image):
    tf.io.write_file(str(path), tf.io.encode_png(image))
    return str(path)


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    """A 10-class softmax model on 8x8 grey images, with fixed random weights."""
    keras.utils.set_random_seed(7)
    model = keras.Sequential(
        [keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(10, activation="softmax")]
    )
    model.layers[-1].set_weights(
        [np.random.default_rng(0).normal(0, 3, (64, 10)).astype("float32"), np.zeros(10, "float32")]
    )
    path = tmp_path_factory.mktemp("predict") / "tiny.keras"
    model.save(path)
    return str(path), model


def test_png_and_npy_images_get_the_models_top_classes_with_names(model_file, tmp_path, capsys):
    path, model = model_file
    rng = np.random.default_rng(1)
    grey = rng.integers(0, 256, (3, 8, 8, 1), dtype=np.uint8)
    pngs = [write_png(tmp_path / f"grey{i}.png", image) for i, image in enumerate(grey)]
    batch = rng.random((2, 8, 8)).astype("float32")  # floats in [0, 1], a batch of (H, W) images
    np.save(tmp_path / "batch.npy", batch)
    rgb = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
    rgb_png = write_png(tmp_path / "rgb.png", rgb)
    np.save(tmp_path / "rgb.npy", rgb)  # (H, W, 3): one image, not a batch of three

    argv = [
        path,
        *pngs,
        str(tmp_path / "batch.npy"),
        rgb_png,
        str(tmp_path / "rgb.npy"),
        "--dataset",
        "fashion_mnist",
        "--top-k",
        "3",
    ]
    assert cli.main(["predict", *argv]) == 0
    printed = parse(capsys.readouterr().out)
    # What the model gives on the same images, prepared here: /255, luminance by hand.
    luminance = (rgb.astype("float64") @ [0.299, 0.587, 0.114]).reshape(1, 8, 8, 1) / 255.0
    inputs = np.concatenate([grey / 255.0, batch[..., None], luminance, luminance]).astype("float32")
    expected = model.predict(inputs, verbose=0)
    labels = [*pngs, f"{tmp_path / 'batch.npy'}[0]", f"{tmp_path / 'batch.npy'}[1]", rgb_png, str(tmp_path / "rgb.npy")]
    assert list(printed) == labels
    for label, scores in zip(labels, expected):
        top = np.argsort(-scores)[:3]
        assert [index for _, index, _ in printed[label]] == list(top), label
        assert [name for _, _, name in printed[label]] == [FASHION[i] for i in top]
        np.testing.assert_allclose([score for score, _, _ in printed[label]], scores[top], atol=1e-4)


def test_other_sizes_are_resized_and_said_and_without_names_indices_are_shown(model_file, tmp_path, capsys):
    path, model = model_file
    image = np.random.default_rng(2).integers(0, 256, (16, 16, 1), dtype=np.uint8)
    png = write_png(tmp_path / "big.png", image)
    assert cli.main(["predict", path, png, "--top-k", "1"]) == 0
    captured = capsys.readouterr()
    assert f"{png} is 16x16, resized to the model's 8x8" in captured.err
    assert "class names unknown" in captured.err
    expected = model.predict(tf.image.resize(image[None] / 255.0, (8, 8), antialias=True), verbose=0)[0]
    ((score, index, name),) = parse(captured.out)[png]
    assert index == int(np.argmax(expected)) and name == str(index)


def test_bad_images_and_models_are_one_line_errors(model_file, tmp_path, capsys):
    path, _ = model_file
    np.save(tmp_path / "loud.npy", np.full((8, 8), 3.5, "float32"))
    cases = [
        ([path, str(tmp_path / "absent.png")], "image file"),
        ([path, str(tmp_path / "loud.npy")], "float values in [3.5, 3.5]; expected [0, 1]"),
        (["EffCapsNet/nosuch", str(tmp_path / "loud.npy")], "expected a .keras file or a preset MODEL/NAME (one of"),
    ]
    for argv, message in cases:
        assert cli.main(["predict", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_an_npy_file_without_images_is_a_one_line_error_naming_it(model_file, tmp_path, capsys):
    path, _ = model_file
    png = write_png(tmp_path / "fine.png", np.zeros((8, 8, 1), np.uint8))
    for name, shape in (("none.npy", (0, 8, 8)), ("none4d.npy", (0, 8, 8, 1)), ("no_pixels.npy", (0, 0))):
        empty = str(tmp_path / name)
        np.save(empty, np.zeros(shape, "float32"))
        assert cli.main(["predict", path, png, empty]) == 2  # a user error, as a missing file: status 2, not 1
        captured = capsys.readouterr()
        errors = [line for line in captured.err.splitlines() if "error" in line]
        assert errors == [
            f"keras-capsules predict: error: predict: {empty!r} holds no images: its array of shape {shape} is empty."
        ]
        assert captured.out.splitlines()[0] == png  # the readable image is still answered


def test_a_folder_gives_its_images_and_those_of_its_sub_folders_and_an_empty_one_is_refused(
    model_file, tmp_path, capsys
):
    path, _ = model_file
    folder = tmp_path / "pictures"
    for name in ("b.png", "a/c.png", "a.npy", ".hidden.png", ".cache/d.png", "notes.txt"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".png"):
            write_png(folder / name, np.zeros((8, 8, 1), np.uint8))
        elif name.endswith(".npy"):
            np.save(folder / name, np.zeros((8, 8), np.uint8))
        else:
            (folder / name).write_text("not an image")
    assert cli.main(["predict", path, str(folder), "--top-k", "1"]) == 0
    answered = [line for line in capsys.readouterr().out.splitlines() if not line.startswith(" ")]
    assert answered == [str(folder / "a.npy"), str(folder / "a" / "c.png"), str(folder / "b.png")]  # sorted paths
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["predict", path, str(empty)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("keras-capsules predict: error: predict: argument `IMAGE`") and err.count("\n") == 1, err
    assert f"received {str(empty)!r}, a folder without one" in err and "Traceback" not in err


def test_preset_names_the_digits_of_real_mnist_test_images(tmp_path, capsys):
    images, labels = datasets.load_arrays("mnist_sample", "test")[:2]
    pngs = [write_png(tmp_path / f"digit{i}.png", images[i]) for i in range(4)]
    assert cli.main(["predict", "effcapsnet:mnist", *pngs, "--top-k", "2"]) == 0  # MODEL:NAME, any case
    printed = parse(capsys.readouterr().out)
    names = datasets.class_names("mnist")
    correct = sum(printed[png][0][2] == names[label] for png, label in zip(pngs, labels[:4]))
    assert correct >= 3  # the preset is 99.6 % accurate on the full test set
