"""Augmentation presets: hand-checked geometry, evaluation transforms, determinism per seed."""

import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import datasets
from keras_capsules.datasets import augment


def _seed(i):
    return tf.constant([7, i], tf.int64)


def test_mnist_shift2_is_a_zero_filled_translation_of_at_most_2_px():
    image = np.zeros((28, 28, 1), np.float32)
    image[10:14, 12:15] = 1.0
    seen = set()
    for i in range(60):
        out = augment.get_augmentation("mnist_shift2").train(tf.constant(image), _seed(i)).numpy()
        rows, cols = np.nonzero(out[..., 0])
        dy, dx = rows.min() - 10, cols.min() - 12
        assert abs(dy) <= 2 and abs(dx) <= 2
        np.testing.assert_array_equal(out, np.roll(image, (dy, dx), axis=(0, 1)))
        seen.add((dy, dx))
    assert len(seen) > 10


def test_effcapsnet_pipeline_parts():
    ones = tf.ones((28, 28, 1))
    for i in range(20):
        erased = augment._eff_erase(ones, _seed(i)).numpy()[..., 0]
        rows, cols = np.nonzero(erased == 0)
        assert len(rows) == 16 and rows.max() - rows.min() == 3 and cols.max() - cols.min() == 3
        assert 4 <= rows.min() <= 22 and 4 <= cols.min() <= 22
    digit = np.zeros((28, 28, 1), np.float32)
    digit[6:20, 9:17] = 0.5
    for i in range(20):
        shifted = augment._eff_shift(tf.constant(digit), _seed(i)).numpy()
        rows, cols = np.nonzero(shifted[..., 0])
        # Only moved inside the empty margins: same ink, no wrap-around.
        np.testing.assert_array_equal(shifted, np.roll(digit, (rows.min() - 6, cols.min() - 9), axis=(0, 1)))
        squished = augment._eff_squish(tf.constant(digit), _seed(i)).numpy()
        assert squished.shape == (28, 28, 1) and 0.0 <= squished.min() and squished.max() <= 1.0
        # Narrower by 1-7 columns of 28: the ink mass shrinks by about that factor (Lanczos ringing aside).
        assert 0.7 * digit.sum() < squished.sum() < 0.99 * digit.sum()
    images, _ = datasets.load_arrays("mnist_sample", "test")
    out = datasets.load("mnist_sample", "test", batch_size=32, augment="effcapsnet_mnist", training=True)
    batch = next(iter(out))[0].numpy()
    assert batch.shape == (32, 28, 28, 1) and 0.0 <= batch.min() and batch.max() <= 1.0
    assert not np.allclose(batch, images[:32] / 255.0)


def test_cifar_and_fm_presets():
    image = tf.constant(np.random.default_rng(1).uniform(size=(32, 32, 3)).astype(np.float32))
    preset = augment.get_augmentation("cifar24")
    assert tuple(preset.train(image, _seed(0)).shape) == (24, 24, 3)
    np.testing.assert_array_equal(preset.evaluate(image).numpy(), image.numpy()[4:28, 4:28])
    assert tuple(augment.get_augmentation("cifar_crop_flip").train(image, _seed(0)).shape) == (32, 32, 3)
    # FMRouting's tf.image.per_image_standardization on 0-255 pixels: one mean and deviation for all channels.
    pixels = image.numpy().astype(np.float64) * 255.0
    expected = (pixels - pixels.mean()) / max(pixels.std(), 1.0 / np.sqrt(pixels.size))
    standardized = augment.get_augmentation("fm_cifar").evaluate(image).numpy()
    np.testing.assert_allclose(standardized, expected, atol=1e-4)
    assert abs(standardized[..., 0].mean() - standardized[..., 1].mean()) > 0  # channels are not centred one by one
    flat_image = augment.get_augmentation("fm_svhn").evaluate(tf.fill((32, 32, 3), 0.5)).numpy()
    assert np.all(flat_image == 0)  # no contrast: the floored deviation keeps it finite


def test_cifar24_crop_flip_is_a_24_px_window_possibly_mirrored_and_nothing_else():
    image = np.random.default_rng(2).uniform(size=(32, 32, 3)).astype(np.float32)
    preset = augment.get_augmentation("cifar24_crop_flip")
    windows = [image[i : i + 24, j : j + 24] for i in range(9) for j in range(9)]
    candidates = windows + [w[:, ::-1] for w in windows]
    flipped = 0
    for i in range(12):
        out = preset.train(tf.constant(image), _seed(i)).numpy()
        matches = [k for k, c in enumerate(candidates) if np.array_equal(out, c)]
        assert matches, "not a plain (possibly mirrored) 24 x 24 window: values changed"
        flipped += matches[0] >= len(windows)
    assert 0 < flipped < 12  # both orientations occur over 12 draws
    np.testing.assert_array_equal(preset.evaluate(tf.constant(image)).numpy(), image[4:28, 4:28])


def test_presets_are_deterministic_per_seed_and_change_every_epoch():
    def run(seed):
        dataset = datasets.load(
            "mnist_sample", "test", batch_size=64, augment="mnist_shift2", training=True, shuffle=False, seed=seed
        )
        return [next(iter(dataset))[0].numpy() for _ in range(2)]

    first, again, other = run(1), run(1), run(2)
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.array_equal(first[0], first[1]) and not np.array_equal(first[0], other[0])
    evaluation = datasets.load("mnist_sample", "test", batch_size=8, augment="mnist_shift2", shuffle=False)
    np.testing.assert_allclose(
        next(iter(evaluation))[0].numpy(), datasets.load_arrays("mnist_sample", "test")[0][:8] / 255.0, atol=1e-7
    )


def test_every_preset_is_documented():
    for name in datasets.available_augmentations():
        preset = datasets.get_augmentation(name)
        assert preset.description and preset.source
    with pytest.raises(ValueError, match="already registered"):
        datasets.register_augmentation("mnist_shift2", lambda x, s: x)
