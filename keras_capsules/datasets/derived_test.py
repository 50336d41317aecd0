"""Derived MNIST sets: every example recomputed in NumPy from its provenance, label sums, shift bounds, determinism."""

import numpy as np
import pytest

from keras_capsules import datasets
from keras_capsules.datasets import derived


@pytest.fixture(scope="module")
def digits():
    images, labels = datasets.load_arrays("mnist_sample", "test")
    return images[:400], labels[:400]


def _numpy_place(digit, dy, dx, pad):
    """Independent placement: a zero canvas with the digit's top-left corner at (pad + dy, pad + dx)."""
    h, w = digit.shape[:2]
    canvas = np.zeros((h + 2 * pad, w + 2 * pad, 1), np.int32)
    canvas[pad + dy : pad + dy + h, pad + dx : pad + dx + w] = digit
    return canvas


def _examples(kind, images, labels, count, **kwargs):
    dataset, size = derived.derived_examples(kind, images, labels, **kwargs)
    batch = next(iter(dataset.batch(count)))
    return {k: v.numpy() for k, v in batch.items()}, size


def test_place_moves_a_pixel_by_hand_computed_amounts():
    digit = np.zeros((28, 28, 1), np.uint8)
    digit[0, 0] = 255
    out = derived.place(digit, 4, -4, pad=4, shift=4).numpy()
    assert out.shape == (36, 36, 1)
    assert list(zip(*np.nonzero(out[..., 0]))) == [(8, 0)]
    out = derived.place(digit, -6, 6, pad=6, shift=6).numpy()
    assert out.shape == (40, 40, 1) and list(zip(*np.nonzero(out[..., 0]))) == [(0, 12)]


def test_multi_mnist_examples_match_their_provenance(digits):
    images, labels = digits
    batch, size = _examples("multi", images, labels, 300, seed=5, training=False)
    assert size == 400
    for i in range(300):
        a, b = batch["index_a"][i], batch["index_b"][i]
        (dya, dxa), (dyb, dxb) = batch["shift_a"][i], batch["shift_b"][i]
        assert max(abs(dya), abs(dxa), abs(dyb), abs(dxb)) <= 4
        assert labels[a] != labels[b]
        expected = np.minimum(_numpy_place(images[a], dya, dxa, 4) + _numpy_place(images[b], dyb, dxb, 4), 255)
        np.testing.assert_array_equal(batch["image"][i], expected)
        hot = np.zeros(10)
        hot[[labels[a], labels[b]]] = 1
        np.testing.assert_array_equal(batch["label"][i], hot)
    assert np.all(batch["label"].sum(axis=1) == 2)
    assert len({tuple(s) for s in batch["shift_a"]}) > 40  # shifts cover the 9x9 range, not one value


def test_diverse_multi_mnist_mixes_singles_and_pairs(digits):
    images, labels = digits
    batch, _ = _examples("diverse", images, labels, 2400, seed=1, training=False, pairs_per_image=6)
    single = batch["index_b"] == -1
    assert 0.12 < single.mean() < 0.22  # P(single) = 1/6
    sums = batch["label"].sum(axis=1)
    assert np.all(sums[single] == 1) and np.all(sums[~single] == 2)
    for i in np.flatnonzero(single)[:50]:
        a = batch["index_a"][i]
        dy, dx = batch["shift_a"][i]
        np.testing.assert_array_equal(batch["image"][i], _numpy_place(images[a], dy, dx, 4))
        assert batch["label"][i][labels[a]] == 1
    assert np.array_equal(batch["index_a"][:12], np.repeat(np.arange(2), 6))  # pairs_per_image repeats each digit


def test_expanded_mnist_is_a_translation_on_40x40(digits):
    images, labels = digits
    batch, _ = _examples("expanded", images, labels, 200, seed=0, training=False, pad=6, shift=6)
    for i in range(200):
        a = batch["index_a"][i]
        dy, dx = batch["shift_a"][i]
        assert max(abs(dy), abs(dx)) <= 6 and batch["label"][i] == labels[a]
        np.testing.assert_array_equal(batch["image"][i], _numpy_place(images[a], dy, dx, 6))


def test_determinism_per_seed(digits):
    images, labels = digits

    def epochs(seed, training, n=2):
        dataset, _ = derived.derived_examples("multi", images, labels, seed=seed, training=training)
        return [next(iter(dataset.batch(64)))["image"].numpy() for _ in range(n)]

    test_a, test_b = epochs(3, False), epochs(3, False)
    np.testing.assert_array_equal(test_a[0], test_a[1])  # fixed test examples, every epoch
    np.testing.assert_array_equal(test_a[0], test_b[0])  # and every run
    assert not np.array_equal(test_a[0], epochs(4, False)[0])
    train_a, train_b = epochs(3, True), epochs(3, True)
    assert not np.array_equal(train_a[0], train_a[1])  # new pairs every epoch
    np.testing.assert_array_equal(train_a[1], train_b[1])  # the same sequence of epochs for the same seed


def test_load_multi_mnist_batches():
    x, y = next(iter(datasets.load("multi_mnist", "train", batch_size=16, base="mnist_sample", limit=100)))
    assert tuple(x.shape) == (16, 36, 36, 1) and y.dtype.name == "float32" and tuple(y.shape) == (16, 10)
    assert float(x.numpy().max()) <= 1.0 and np.all(y.numpy().sum(axis=1) == 2)
    x, y = datasets.load_arrays("expanded_mnist", "test", base="mnist_sample")
    assert x.shape == (2000, 40, 40, 1) and x.dtype == np.uint8 and y.dtype == np.int32
    with pytest.raises(ValueError, match=r"at least 2 classes"):
        derived.derived_examples("multi", np.zeros((3, 28, 28, 1), np.uint8), np.array([1, 1, 1]))
