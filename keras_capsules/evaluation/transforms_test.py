"""The affine transforms against hand-made cases."""

import numpy as np
import pytest

from keras_capsules.evaluation import transforms

#: An asymmetric 5x7 two-channel image (odd sizes: the centre is a pixel).
IMAGE = np.arange(5 * 7 * 2, dtype="float32").reshape(1, 5, 7, 2) / 70.0
SQUARE = np.arange(7 * 7, dtype="float32").reshape(1, 7, 7, 1) / 49.0


def test_rotation_by_90_degrees_is_counter_clockwise_rot90():
    np.testing.assert_allclose(transforms.rotate(SQUARE, 90.0), np.rot90(SQUARE, 1, axes=(1, 2)), atol=1e-6)
    np.testing.assert_allclose(transforms.rotate(SQUARE, -90.0), np.rot90(SQUARE, -1, axes=(1, 2)), atol=1e-6)
    np.testing.assert_allclose(transforms.rotate(SQUARE, 180.0), SQUARE[:, ::-1, ::-1], atol=1e-6)


def test_a_marked_pixel_turns_counter_clockwise():
    image = np.zeros((1, 5, 5, 1), "float32")
    image[0, 2, 4] = 1.0  # right of the centre (2, 2)
    rotated = transforms.rotate(image, 90.0)
    assert np.argwhere(rotated[0, ..., 0] > 0.5).tolist() == [[0, 2]]  # now above it


def test_identities_return_the_input():
    for out in (
        transforms.rotate(IMAGE, 0.0),
        transforms.scale(IMAGE, 1.0),
        transforms.shear(IMAGE, 0.0),
        transforms.translate(IMAGE, 0, 0),
    ):
        np.testing.assert_allclose(out, IMAGE, atol=1e-6)


@pytest.mark.parametrize("dx, dy", [(2, 0), (0, 3), (-1, 2), (3, -4)])
def test_integer_translation_is_roll_with_zero_fill(dx, dy):
    expected = np.roll(IMAGE, (dy, dx), axis=(1, 2))
    if dy > 0:
        expected[:, :dy] = 0
    if dy < 0:
        expected[:, dy:] = 0
    if dx > 0:
        expected[:, :, :dx] = 0
    if dx < 0:
        expected[:, :, dx:] = 0
    np.testing.assert_allclose(transforms.translate(IMAGE, dx, dy), expected, atol=1e-6)


def test_half_pixel_translation_averages_neighbours():
    image = np.zeros((1, 1, 4, 1), "float32")
    image[0, 0, 1] = 1.0
    np.testing.assert_allclose(transforms.translate(image, 0.5, 0)[0, 0, :, 0], [0.0, 0.5, 0.5, 0.0], atol=1e-6)


def test_scale_two_doubles_a_centred_square():
    image = np.zeros((1, 15, 15, 1), "float32")
    image[0, 6:9, 6:9] = 1.0  # 3x3 square centred on (7, 7)
    out = transforms.scale(image, 2.0)[0, ..., 0]
    # Output pixel p samples the input at 7 + (p - 7) / 2: full 1 for p in 5..9 (samples 6..8), and a
    # half-pixel blend 0.5 at p = 4 and 10 (samples 5.5 and 8.5): side 5 full + two half rows = 6 = 2 * 3.
    expected_row = np.zeros(15)
    expected_row[5:10] = 1.0
    expected_row[[4, 10]] = 0.5
    np.testing.assert_allclose(out, np.outer(expected_row, expected_row), atol=1e-6)
    assert out.sum() == pytest.approx(36.0)  # 4x the 9 pixels of area
    np.testing.assert_allclose(transforms.scale(out[None, ..., None], 0.5)[0, 6:9, 6:9, 0], 1.0, atol=1e-6)


def test_shear_moves_the_rows_of_a_vertical_line():
    image = np.zeros((1, 5, 9, 1), "float32")
    image[0, :, 4] = 1.0  # the centre column
    out = transforms.shear(image, 1.0)[0, ..., 0]
    # (x, y) -> (x + y, y), y = 2 - row: rows 0..4 move by +2, +1, 0, -1, -2 columns.
    expected = np.zeros((5, 9))
    expected[np.arange(5), 4 + np.array([2, 1, 0, -1, -2])] = 1.0
    np.testing.assert_allclose(out, expected, atol=1e-6)
    half = transforms.shear(image, 0.5)[0, ..., 0]
    np.testing.assert_allclose(half[0], np.eye(9)[5], atol=1e-6)  # row 0: y = 2, offset +1
    np.testing.assert_allclose(half[1, 4:6], [0.5, 0.5], atol=1e-6)  # row 1: y = 1, offset +0.5


def test_per_image_magnitudes():
    batch = np.concatenate([SQUARE, SQUARE])
    out = transforms.rotate(batch, [90.0, 0.0])
    np.testing.assert_allclose(out[0], np.rot90(SQUARE[0], 1, axes=(0, 1)), atol=1e-6)
    np.testing.assert_allclose(out[1], SQUARE[0], atol=1e-6)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"rotate: argument `images` expected a batch of shape \(N, H, W, C\)"):
        transforms.rotate(SQUARE[0], 10.0)
    with pytest.raises(ValueError, match=r"scale: argument `factor` expected positive numbers"):
        transforms.scale(SQUARE, 0.0)
    with pytest.raises(ValueError, match=r"translate: argument `dx` expected a number or one per image, shape \(1,\)"):
        transforms.translate(SQUARE, [1, 2], 0)
