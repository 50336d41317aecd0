"""Image transforms for ``tf.data`` pipelines (TensorFlow): pure functions of one image ``(H, W, C)`` float32.

Random transforms take a stateless ``seed`` (an int64 ``(2,)`` tensor) and return the same image for
the same seed; :func:`split_seed` derives independent seeds for a chain of them. The papers'
augmentation presets (:mod:`keras_capsules.datasets.augment`) are built from these.
"""

import math

import tensorflow as tf


def split_seed(seed, n):
    """``n`` independent stateless seeds (each an int64 ``(2,)`` tensor) derived from ``seed``."""
    return tf.unstack(tf.random.experimental.stateless_split(seed, n))


def shift(image, seed, pixels):
    """Random translation by up to ``pixels`` in each direction with zero fill (pad, then random crop)."""
    height, width, channels = image.shape
    padded = tf.pad(image, [[pixels, pixels], [pixels, pixels], [0, 0]])
    return tf.image.stateless_random_crop(padded, (height, width, channels), seed)


def pad_and_crop(image, seed, pixels, size):
    """Zero-pads by ``pixels`` then takes a random ``size`` crop."""
    padded = tf.pad(image, [[pixels, pixels], [pixels, pixels], [0, 0]])
    return tf.image.stateless_random_crop(padded, (size[0], size[1], image.shape[-1]), seed)


def brightness_contrast(image, seed, max_delta, lower, upper):
    """``tf.image`` random brightness (``+U(-max_delta, max_delta)``) then random contrast (``U(lower, upper)``)."""
    first, second = split_seed(seed, 2)
    image = tf.image.stateless_random_brightness(image, max_delta, first)
    return tf.image.stateless_random_contrast(image, lower, upper, second)


def standardize(image):
    """Per-image, per-channel standardisation to zero mean and unit variance."""
    mean, variance = tf.nn.moments(image, axes=[0, 1], keepdims=True)
    return (image - mean) / tf.maximum(tf.sqrt(variance), 1.0 / math.sqrt(float(image.shape[0] * image.shape[1])))


def per_image_standardization(image):
    """FMRouting's standardisation: ``tf.image.per_image_standardization`` of the 0-255 image.

    One mean and one standard deviation over all pixels and channels (not per channel), the
    deviation floored at ``1 / sqrt(H * W * C)`` in 0-255 units, as the reference computes it on
    ``uint8`` images cast to float. Input ``(H, W, C)`` in [0, 1]; output zero mean, unit variance.
    """
    return tf.image.per_image_standardization(image * 255.0)


def _project(image, transform):
    """``image`` resampled by the 8-entry projective ``transform`` (output pixel -> input point), bilinear, zero fill."""
    height, width = image.shape[0], image.shape[1]
    out = tf.raw_ops.ImageProjectiveTransformV3(
        images=image[None],
        transforms=tf.cast(transform[None], tf.float32),
        output_shape=tf.constant([height, width]),
        fill_value=0.0,
        interpolation="BILINEAR",
        fill_mode="CONSTANT",
    )
    return tf.ensure_shape(out[0], image.shape)


def rotate(image, degrees):
    """Rotates about the image centre (bilinear, zero fill)."""
    height, width = image.shape[0], image.shape[1]
    angle = degrees * (math.pi / 180.0)
    cos, sin = tf.cos(angle), tf.sin(angle)
    cy, cx = (height - 1) / 2.0, (width - 1) / 2.0
    # Output pixel (x, y) samples the input at R(-angle) (x - c) + c.
    return _project(
        image, tf.stack([cos, -sin, cx - cos * cx + sin * cy, sin, cos, cy - sin * cx - cos * cy, 0.0, 0.0])
    )


def translate(image, seed, fraction):
    """Random translation by ``U(-fraction, fraction)`` of the height and width (bilinear, zero fill), as
    ``keras.layers.RandomTranslation(fraction, fraction, fill_mode="constant")``."""
    height, width = image.shape[0], image.shape[1]
    offset = tf.random.stateless_uniform([2], seed, -fraction, fraction) * tf.constant([height, width], tf.float32)
    # Output pixel (x, y) samples the input at (x - dx, y - dy).
    return _project(image, tf.stack([1.0, 0.0, -offset[1], 0.0, 1.0, -offset[0], 0.0, 0.0]))


def pad_to(image, size):
    """Zero-pads an ``(H, W, C)`` image, centred, to ``size = (H', W')`` (28x28 -> 32x32)."""
    height, width = image.shape[0], image.shape[1]
    return tf.image.pad_to_bounding_box(image, (size[0] - height) // 2, (size[1] - width) // 2, size[0], size[1])
