"""affine_mnist: hand-placed pixels, an independent NumPy warp, ranges, ink kept on the canvas, seeds, the affNIST choice."""

import numpy as np
import pytest

from keras_capsules import datasets
from keras_capsules.datasets import affine_mnist
from keras_capsules.evaluation import transforms


@pytest.fixture(scope="module")
def digits():
    images, labels = datasets.load_arrays("mnist_sample", "test")
    return images[:600], labels[:600]


@pytest.fixture(scope="module")
def generated():
    """The whole generated set on the embedded sample: ``(images, labels)`` as ``load_arrays`` gives them."""
    return datasets.load_arrays("affine_mnist", "test", base="mnist_sample")


def _one_pixel(row, col):
    digit = np.zeros((1, 28, 28, 1), np.uint8)
    digit[0, row, col] = 200
    return digit


def test_identity_is_the_6_pixel_padding_and_pixels_move_by_hand_computed_amounts(digits):
    images = digits[0][:20]
    identity = affine_mnist.warp(images, np.broadcast_to(np.eye(2), (20, 2, 2)), np.zeros((20, 2)))
    np.testing.assert_array_equal(identity, np.pad(images, ((0, 0), (6, 6), (6, 6), (0, 0))))
    # Digit pixel (0, 0) sits at canvas (6, 6): x = 6 - 19.5, y = 19.5 - 6. Moving 3 right and 2 up: canvas (4, 9).
    moved = affine_mnist.warp(_one_pixel(0, 0), np.eye(2)[None], np.array([[3.0, 2.0]]))
    assert list(zip(*np.nonzero(moved[0, ..., 0]))) == [(4, 9)] and moved[0, 4, 9, 0] == 200
    # A quarter turn counter-clockwise maps (x, y) = (-13.5, 13.5) to (-13.5, -13.5): canvas (33, 6).
    turned = affine_mnist.warp(_one_pixel(0, 0), np.array([[[0.0, -1.0], [1.0, 0.0]]]), np.zeros((1, 2)))
    assert list(zip(*np.nonzero(turned[0, ..., 0]))) == [(33, 6)] and turned[0, 33, 6, 0] == 200


def test_images_and_labels_match_an_independent_numpy_warp_of_their_source_digit(digits, generated):
    images, labels = digits
    out, out_labels = generated
    assert out.shape == (2000, 40, 40, 1) and out.dtype == np.uint8
    np.testing.assert_array_equal(out_labels, datasets.load_arrays("mnist_sample", "test")[1])
    p = affine_mnist.sample_transforms(images)
    # A composed by hand from the drawn parameters: rotation @ shear @ scale.
    angle = np.radians(p["rotation"])
    c, s, k = np.cos(angle), np.sin(angle), p["shear"]
    sx, sy = p["scale"][:, 0], p["scale"][:, 1]
    matrix = np.stack([np.stack([c * sx, (c * k - s) * sy], -1), np.stack([s * sx, (s * k + c) * sy], -1)], -2)
    reference = transforms.affine(np.pad(images, ((0, 0), (6, 6), (6, 6), (0, 0))), matrix, p["translation"])
    difference = np.abs(np.round(reference) - out[: len(images)].astype("float32"))
    assert difference.max() <= 1 and np.mean(difference > 0) < 1e-3  # float32 rounding of the same bilinear samples


def test_every_parameter_lies_in_the_affnist_ranges_and_fills_them(digits):
    p = affine_mnist.sample_transforms(digits[0])
    for values, (low, high) in ((p["rotation"], (-20, 20)), (p["shear"], (-0.2, 0.2)), (p["scale"], (0.8, 1.2))):
        assert values.min() >= low and values.max() <= high
        assert values.min() < low + 0.05 * (high - low) and values.max() > high - 0.05 * (high - low)
    assert p["translation"].min() < -10 and p["translation"].max() > 10  # translations span the canvas


def test_the_ink_box_stays_inside_the_canvas_and_no_ink_is_cut(digits, generated):
    images = digits[0]
    p = affine_mnist.sample_transforms(images)
    for i in range(len(images)):
        rows, cols = np.nonzero(images[i, ..., 0])
        x = np.array([cols.min() - 0.5, cols.max() + 0.5]) + 6 - 19.5
        y = 19.5 - (np.array([rows.min() - 0.5, rows.max() + 0.5]) + 6)
        corners = np.array([[a, b] for a in x for b in y]) @ p["matrix"][i].T + p["translation"][i]
        assert np.all(np.abs(corners) <= 20 + 1e-9), i
    # The same warp on an 80x80 canvas keeps all ink; the 40x40 images hold (almost) all of it.
    wide = transforms.affine(
        np.pad(images[:300], ((0, 0), (26, 26), (26, 26), (0, 0))), p["matrix"][:300], p["translation"][:300]
    )
    kept = generated[0][:300].reshape(300, -1).sum(1) / wide.reshape(300, -1).sum(1)
    assert kept.min() > 0.99


def test_the_seed_decides_the_images(digits, generated):
    again = datasets.load_arrays("affine_mnist", "test", base="mnist_sample")[0]
    assert again.tobytes() == generated[0].tobytes()
    other = datasets.load_arrays("affine_mnist", "test", base="mnist_sample", transform_seed=1)[0]
    assert np.mean(np.any(other != generated[0], axis=(1, 2, 3))) > 0.99
    head, _ = affine_mnist.transform_digits(digits[0][:50])  # the first examples do not depend on the count
    np.testing.assert_array_equal(head, generated[0][:50])


def test_load_serves_scaled_batches_with_the_digit_classes():
    info = datasets.info("affine_mnist")
    assert (info.image_shape, info.classes, datasets.class_names("affine_mnist")) == (
        (40, 40, 1),
        10,
        tuple("0123456789"),
    )
    images, labels = next(iter(datasets.load("affine_mnist", "test", batch_size=8, base="mnist_sample", limit=8)))
    assert images.shape == (8, 40, 40, 1) and 0.0 <= float(images.numpy().min()) and float(images.numpy().max()) <= 1.0
    assert labels.dtype.name == "int32"


def test_evaluation_chooses_affnist_only_when_its_files_are_present(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("KERAS_CAPSULES_DATA", raising=False)
    assert datasets.evaluation_dataset("mnist", "test", tmp_path) == "mnist"  # other names pass unchanged
    assert capsys.readouterr().out == ""
    assert datasets.evaluation_dataset(datasets.AFFNIST_OR_GENERATED, "test", tmp_path) == "affine_mnist"
    line = capsys.readouterr().out
    assert (
        line.count("\n") == 1
        and "evaluating on affine_mnist:test" in line
        and "not affNIST itself" in line
        and str(tmp_path) in line
    )
    (tmp_path / "affnist" / "test_batches").mkdir(parents=True)
    assert (
        datasets.evaluation_dataset(datasets.AFFNIST_OR_GENERATED, "test", tmp_path) == "affine_mnist"
    )  # an empty folder is no file
    (tmp_path / "affnist" / "test_batches" / "1.mat").write_bytes(b"")
    capsys.readouterr()
    assert datasets.evaluation_dataset(datasets.AFFNIST_OR_GENERATED, "test", tmp_path) == "affnist"
    assert "evaluating on affnist:test" in capsys.readouterr().out
    assert affine_mnist.affnist_files("train", tmp_path) == []  # training files are named training*
    (tmp_path / "training.mat.zip").write_bytes(b"")
    assert affine_mnist.affnist_files("train", tmp_path) == [str(tmp_path / "training.mat.zip")]


def test_bad_shapes_are_named(monkeypatch):
    with pytest.raises(
        ValueError,
        match=r"affine_mnist\.warp: argument `images` expected shape \(N, 28, 28, C\), received shape \(2, 32, 32, 1\)",
    ):
        affine_mnist.warp(np.zeros((2, 32, 32, 1), np.uint8), np.broadcast_to(np.eye(2), (2, 2, 2)), np.zeros((2, 2)))
    with pytest.raises(
        ValueError,
        match=r"affine_mnist\.warp: arguments `matrix` and `translation` expected shapes \(2, 2, 2\) and \(2, 2\), received \(2, 2\)",
    ):
        affine_mnist.warp(np.zeros((2, 28, 28, 1), np.uint8), np.eye(2), np.zeros((2, 2)))
    colour = (np.zeros((2, 32, 32, 3), np.uint8), np.zeros(2, np.int32))
    monkeypatch.setattr(affine_mnist, "resolve_arrays", lambda *args, **kwargs: colour)
    with pytest.raises(
        ValueError,
        match=r"option `base` of dataset 'affine_mnist' expected .*28x28 .*'cifar10' with images of shape \(32, 32, 3\)",
    ):
        datasets.load_arrays("affine_mnist", "test", base="cifar10")
