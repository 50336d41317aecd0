"""Image transforms against NumPy: rotation by 90 degrees, centred padding, translation mass and range, standardisation."""

import numpy as np
import pytest
import tensorflow as tf

from keras_capsules.datasets import image_transforms


def test_rotate_by_90_degrees_matches_rot90():
    image = np.random.default_rng(0).uniform(size=(28, 28, 1)).astype(np.float32)
    out = image_transforms.rotate(tf.constant(image), tf.constant(90.0)).numpy()
    assert any(np.allclose(out, np.rot90(image, k, axes=(0, 1)), atol=1e-5) for k in (1, 3))
    np.testing.assert_allclose(image_transforms.rotate(tf.constant(image), tf.constant(0.0)).numpy(), image, atol=1e-6)


def test_pad_to_and_translate_against_numpy():
    image = np.random.default_rng(1).uniform(size=(28, 28, 1)).astype("float32")
    np.testing.assert_array_equal(
        image_transforms.pad_to(tf.constant(image), (32, 32)).numpy(), np.pad(image, ((2, 2), (2, 2), (0, 0)))
    )
    dot = np.zeros((20, 20, 1), "float32")
    dot[10, 10] = 1.0
    rows, cols = np.mgrid[:20, :20]
    shifts = set()
    for seed in range(6):
        moved = image_transforms.translate(tf.constant(dot), tf.constant([seed, 7], tf.int64), 0.1).numpy()[..., 0]
        assert moved.sum() == pytest.approx(1.0, abs=1e-5)  # bilinear: the mass moves, nothing leaves the image
        dy, dx = (rows * moved).sum() - 10, (cols * moved).sum() - 10
        assert abs(dy) <= 2.0 + 1e-5 and abs(dx) <= 2.0 + 1e-5  # at most 10% of 20 pixels
        shifts.add((round(float(dy), 3), round(float(dx), 3)))
    assert len(shifts) == 6
    np.testing.assert_array_equal(
        image_transforms.translate(tf.constant(dot), tf.constant([0, 1], tf.int64), 0.0).numpy(), dot
    )


def test_standardize_matches_numpy_and_keeps_a_flat_image_finite():
    image = np.random.default_rng(2).uniform(size=(8, 8, 2)).astype(np.float32)
    expected = (image - image.mean(axis=(0, 1))) / image.std(axis=(0, 1))
    np.testing.assert_allclose(image_transforms.standardize(tf.constant(image)).numpy(), expected, atol=1e-5)
    flat = image_transforms.standardize(tf.zeros((8, 8, 1))).numpy()
    assert np.all(np.isfinite(flat)) and np.all(flat == 0)
