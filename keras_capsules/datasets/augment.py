"""The papers' augmentation and preprocessing pipelines as named presets, their registry and multi-view batches (TensorFlow ``tf.data``).

A preset has a random training transform and a deterministic evaluation transform (for example the
smallNORB centre crop), both acting on one image ``(H, W, C)`` float32 in [0, 1]. Randomness is
stateless and drawn from ``seed``: the same seed gives the same sequence of epochs, and each epoch
differs. ``load(..., augment="name")`` applies the training transform to training splits and the
evaluation transform to the others.

Presets that standardise images (``smallnorb_*``, ``fm_*``) return zero-mean, unit-variance values
instead of [0, 1], as in the papers. Per-channel mean/std normalisations of the reference code
(IDPA's CIFAR means, REM's ``(0.1307, 0.3081)``) are left out: they are an affine map of the input
that the first layer absorbs.

The presets chain the image transforms of :mod:`keras_capsules.datasets.image_transforms` (``shift``,
``rotate``, ``translate``, ...), with the Efficient-CapsNet MNIST steps defined here.
"""

import dataclasses
import functools
from typing import Callable, Optional

import tensorflow as tf

from keras_capsules.datasets.image_transforms import (
    brightness_contrast,
    pad_and_crop,
    pad_to,
    per_image_standardization,
    rotate,
    shift,
    split_seed,
    standardize,
    translate,
)

_PRESETS = {}
AUGMENT_SEED_OFFSET = 1_000_003


@dataclasses.dataclass(frozen=True)
class Augmentation:
    """A named preset.

    Attributes:
        name: registry key.
        train: ``train(image, seed) -> image`` with ``seed`` an int64 ``(2,)`` tensor.
        evaluate: ``evaluate(image) -> image`` for evaluation splits (``None``: unchanged).
        description: what it does.
        source: the paper / reference code it follows.
    """

    name: str
    train: Callable
    evaluate: Optional[Callable] = None
    description: str = ""
    source: str = ""

    def apply(self, dataset, training, seed=0):
        """Maps an unbatched ``(image, label)`` dataset through the training or evaluation transform."""
        if not training:
            if self.evaluate is None:
                return dataset
            return dataset.map(lambda x, y: (self.evaluate(x), y), num_parallel_calls=tf.data.AUTOTUNE)
        # Offset from the stream derived sets draw from with the same seed, so the two stay independent.
        seeds = tf.data.Dataset.random(seed=seed + AUGMENT_SEED_OFFSET, rerandomize_each_iteration=True).batch(2)
        return tf.data.Dataset.zip((dataset, seeds)).map(
            lambda example, s: (self.train(example[0], s), example[1]), num_parallel_calls=tf.data.AUTOTUNE
        )


def register_augmentation(name, train, evaluate=None, description="", source=""):
    """Registers a preset under ``name``."""
    if name in _PRESETS:
        raise ValueError(f"register_augmentation: argument `name` {name!r} is already registered.")
    _PRESETS[name] = Augmentation(name, train, evaluate, description, source)
    return _PRESETS[name]


def available_augmentations():
    """Names of the registered presets, sorted."""
    return sorted(_PRESETS)


def get_augmentation(name):
    """The :class:`Augmentation` registered under ``name`` (an ``Augmentation`` passes through)."""
    if isinstance(name, Augmentation):
        return name
    if name not in _PRESETS:
        raise ValueError(
            f"get_augmentation: argument `name` expected one of {available_augmentations()}, received {name!r}."
        )
    return _PRESETS[name]


# ------------------------------------------------------------------------------ MNIST presets


def _mnist_shift2(image, seed):
    return shift(image, seed, 2)


def _mnist_shift2_flip(image, seed):
    first, second = split_seed(seed, 2)
    return tf.image.stateless_random_flip_left_right(shift(image, first, 2), second)


def _eff_rotate(image, seed):
    draws = tf.clip_by_value(tf.random.stateless_normal([2], seed, 0.0, 0.33), -0.9999, 0.9999)
    degrees = tf.math.floor(tf.abs(draws[0] * 30.0)) * tf.sign(draws[0])  # whole degrees, truncated as in the reference
    return tf.cond(draws[1] > 0, lambda: image, lambda: rotate(image, degrees))


def _eff_shift(image, seed):
    first, second = split_seed(seed, 2)
    size = image.shape[0]
    ink = image[..., 0] > 0
    cols = tf.where(tf.reduce_any(ink, axis=0))[:, 0]
    rows = tf.where(tf.reduce_any(ink, axis=1))[:, 0]
    empty = tf.size(cols) == 0
    left, right = tf.reduce_min(cols), size - 1 - tf.reduce_max(cols)
    top, bottom = tf.reduce_min(rows), size - 1 - tf.reduce_max(rows)
    direction = tf.random.stateless_uniform([2], first, 0, 2, dtype=tf.int32)
    amount = tf.minimum(tf.abs(tf.random.stateless_normal([2], second, 0.0, 0.33)), 0.9999)

    def moved(fraction, down, low, high):
        back = tf.math.floor(-fraction * tf.cast(low, tf.float32))
        forth = tf.math.floor(fraction * tf.cast(1 + high, tf.float32))
        return tf.cast(tf.where(down == 1, forth, back), tf.int32)

    dy = moved(amount[1], direction[0], top, bottom)
    dx = moved(amount[0], direction[1], left, right)
    return tf.cond(empty, lambda: image, lambda: tf.roll(image, [dy, dx], axis=[0, 1]))


def _eff_squish(image, seed):
    size = image.shape[0]
    amount = tf.minimum(tf.abs(tf.random.stateless_normal([2], seed, 0.0, 0.33)), 0.9999)
    squeeze = tf.cast(tf.math.floor(amount[0] * (size / 4.0) + 1.0), tf.int32)
    offset = squeeze // 2 + tf.cast(tf.math.floor(amount[1] * 2.0), tf.int32)
    narrow = tf.image.resize(image, tf.stack([size, size - squeeze]), method="lanczos3", antialias=True)
    narrow = tf.clip_by_value(narrow, 0.0, 1.0)
    right = tf.maximum(size - offset - (size - squeeze), 0)
    out = tf.pad(narrow, [[0, 0], [offset, right], [0, 0]])[:, :size]
    return tf.ensure_shape(out, image.shape)


def _eff_erase(image, seed):
    size = image.shape[0]
    corner = tf.random.stateless_uniform([2], seed, 4, size - 5, dtype=tf.int32)  # rows/cols 4 .. 22 on 28x28
    patch = tf.pad(
        tf.zeros([4, 4]), [[corner[0], size - corner[0] - 4], [corner[1], size - corner[1] - 4]], constant_values=1.0
    )
    return image * patch[..., None]


def _effcapsnet_mnist(image, seed):
    seeds = split_seed(seed, 4)
    image = _eff_rotate(image, seeds[0])
    image = _eff_shift(image, seeds[1])
    image = _eff_squish(image, seeds[2])
    return _eff_erase(image, seeds[3])


def _random_shift(image, seed):
    height, width = image.shape[0], image.shape[1]
    return pad_and_crop(image, seed, shift_pixels(height, width), (height, width))


def shift_pixels(height, width):
    """The largest shift of ``"random_shift"``: 1/14 of the shorter side, rounded, at least 1 (2 px on 28x28, 5 px on 64x64)."""
    return max(1, round(min(height, width) / 14))


register_augmentation(
    "mnist_shift2",
    _mnist_shift2,
    description="random translation by up to 2 px in each direction, zero padded",
    source="Sabour et al. 2017 (MNIST, 2-px shifts); REM RandomCrop(28, padding=2) (docs/reference/models.md#dr-capsnet-of-rem)",
)
register_augmentation(
    "fashion_mnist_shift2_flip",
    _mnist_shift2_flip,
    description="random translation by up to 2 px and horizontal flip",
    source="REM Fashion-MNIST loader: RandomCrop(28, padding=2) + RandomHorizontalFlip",
)
register_augmentation(
    "random_shift",
    _random_shift,
    description="random translation by up to 1/14 of the shorter side in each direction (2 px on 28x28), zero padded; any size and channels",
    source="the generic recipes' augmentation for a user's own images (recipes.generic): MNIST's 2-px shifts (Sabour et al. 2017) scaled to the image size",
)
register_augmentation(
    "effcapsnet_mnist",
    _effcapsnet_mnist,
    description="rotate (30 deg x clip(N(0, .33)), half the time) -> shift inside the empty margins -> "
    "horizontal squish by 1-7 px (Lanczos3) -> zero a 4x4 patch at rows/cols 4-22",
    source="Efficient-CapsNet, EscVM utils/pre_process_mnist.py (docs/reference/models.md#effcapsnet-training)",
)


# ------------------------------------------------------------------------------ CIFAR / SVHN presets


def _cifar_crop_flip(image, seed):
    first, second = split_seed(seed, 2)
    return tf.image.stateless_random_flip_left_right(pad_and_crop(image, first, 4, (32, 32)), second)


def _cifar24_train(image, seed):
    seeds = split_seed(seed, 3)
    image = tf.image.stateless_random_crop(image, (24, 24, image.shape[-1]), seeds[0])
    image = tf.image.stateless_random_flip_left_right(image, seeds[1])
    return tf.clip_by_value(brightness_contrast(image, seeds[2], 63.0 / 255.0, 0.2, 1.8), 0.0, 1.0)


def _cifar24_crop_flip(image, seed):
    first, second = split_seed(seed, 2)
    return tf.image.stateless_random_flip_left_right(
        tf.image.stateless_random_crop(image, (24, 24, image.shape[-1]), first), second
    )


def _cifar24_eval(image):
    return tf.image.resize_with_crop_or_pad(image, 24, 24)


def _fm_train(flip):
    def train(image, seed):
        first, second = split_seed(seed, 2)
        image = per_image_standardization(image)
        if flip:
            image = tf.image.stateless_random_flip_left_right(image, first)
        return pad_and_crop(image, second, 4, image.shape[:2])

    return train


register_augmentation(
    "cifar_crop_flip",
    _cifar_crop_flip,
    description="zero-pad 4, random 32x32 crop, horizontal flip",
    source="IDPA main_capsule.py (docs/reference/models.md#invertedattentioncapsnet)",
)
register_augmentation(
    "cifar24",
    _cifar24_train,
    _cifar24_eval,
    description="train: random 24x24 crop, flip, brightness +-63/255, contrast 0.2-1.8; eval: central 24x24 crop",
    source="Sabour et al. 2017 CIFAR-10 (official cifar10_input)",
)
register_augmentation(
    "cifar24_crop_flip",
    _cifar24_crop_flip,
    _cifar24_eval,
    description="train: random 24x24 crop, flip; eval: central 24x24 crop",
    source="REM CIFAR-10 (docs/reference/models.md#dr-capsnet-of-rem): RandomCrop(24) and RandomHorizontalFlip",
)
register_augmentation(
    "fm_cifar",
    _fm_train(flip=True),
    per_image_standardization,
    description="per-image standardisation (all channels together), horizontal flip, zero-pad 4 and random crop back to size; "
    "eval: standardisation",
    source="FMRouting common/inputs/data_input.py (docs/reference/models.md#fmcapsnet)",
)
register_augmentation(
    "fm_svhn",
    _fm_train(flip=False),
    per_image_standardization,
    description="as fm_cifar without the flip (digits)",
    source="FMRouting (docs/reference/models.md#fmcapsnet: no flip for SVHN)",
)


# ------------------------------------------------------------------------------ smallNORB presets


def _norb_preprocess(image, size, channels):
    image = image[..., :channels]
    image = tf.image.resize(image, (size, size), method="bilinear")
    return standardize(image)


def _norb_train(size, crop, channels):
    def train(image, seed):
        first, second = split_seed(seed, 2)
        image = _norb_preprocess(image, size, channels)
        image = tf.image.stateless_random_crop(image, (crop, crop, channels), first)
        return brightness_contrast(image, second, 2.0, 0.5, 1.5)

    return train


def _norb_eval(size, crop, channels):
    def evaluate(image):
        return tf.image.resize_with_crop_or_pad(_norb_preprocess(image, size, channels), crop, crop)

    return evaluate


register_augmentation(
    "smallnorb_em",
    _norb_train(48, 32, 1),
    _norb_eval(48, 32, 1),
    description="first camera, resize 96->48, per-image standardisation; train: random 32x32 crop, brightness "
    "+-2.0, contrast 0.5-1.5; eval: centre 32x32 crop",
    source="Hinton et al. 2018 / IBM data_pipeline_norb.py (docs/reference/models.md#matrixcapsnet); the inner-consensus paper (docs/reference/models.md#consensuscapsnet)",
)
register_augmentation(
    "smallnorb_effcapsnet",
    _norb_train(64, 48, 2),
    _norb_eval(64, 48, 2),
    description="stereo pair, resize 96->64, per-image per-channel standardisation (the reference standardises "
    "with whole-dataset channel statistics); train: random 48x48 crop, brightness +-2.0, contrast 0.5-1.5; "
    "eval: centre 48x48 crop",
    source="Efficient-CapsNet, EscVM utils/pre_process_smallnorb.py (docs/reference/models.md#effcapsnet-training)",
)


# ------------------------------------------------------------------------------ RandAugment


@functools.cache
def _randaugment_layer():
    import keras

    return keras.layers.RandAugment(value_range=(0.0, 1.0))


def _randaugment(image, seed):
    del seed  # Keras' RandAugment draws from its own generator, so this preset is not reproducible from `seed`.
    return tf.ensure_shape(tf.clip_by_value(_randaugment_layer()(image), 0.0, 1.0), image.shape)


register_augmentation(
    "randaugment",
    _randaugment,
    description="keras.layers.RandAugment on [0, 1] images (training only; not reproducible from the seed)",
    source="Zeng et al. 2025 (GLOM), custom_transforms.py (docs/reference/glom.md#heads-and-training)",
)


# ------------------------------------------------------------------------------ GLOM presets and multi-view batches


def _glom(size, crop_padding, flip, translation):
    """GLOM's RandAugment substitute: (pad to ``size``) -> pad ``crop_padding`` and random crop -> flip -> translate."""

    def evaluate(image):
        return image if size is None else pad_to(image, size)

    def train(image, seed):
        seeds = split_seed(seed, 3)
        image = evaluate(image)
        image = pad_and_crop(image, seeds[0], crop_padding, image.shape[:2])
        if flip:
            image = tf.image.stateless_random_flip_left_right(image, seeds[1])
        return translate(image, seeds[2], translation)

    return train, None if size is None else evaluate


_GLOM_SOURCE = (
    "The GLOM code of Zeng et al. 2025 (custom_transforms.py) uses RandAugment (docs/reference/glom.md#heads-and-training); this reproducible substitute "
    "(pad-and-crop, flip, translation) is weaker"
)
register_augmentation(
    "glom_cifar",
    *_glom(None, 4, True, 0.1),
    description="zero-pad 4 and random crop back to size, horizontal flip, random translation up to 10%",
    source=_GLOM_SOURCE,
)
register_augmentation(
    "glom_fashion_mnist",
    *_glom((32, 32), 2, True, 0.05),
    description="zero-pad 28x28 to 32x32 (train and eval: 4x4 windows must divide the 8x8 grid); train: zero-pad 2 "
    "and random crop, horizontal flip, random translation up to 5%",
    source=_GLOM_SOURCE,
)
register_augmentation(
    "glom_mnist",
    *_glom((32, 32), 2, False, 0.05),
    description="as glom_fashion_mnist without the flip (digits)",
    source=_GLOM_SOURCE,
)


def multi_view(dataset, augmentation, views, batch_size, seed=0, drop_remainder=False):
    """Batches of ``views`` independently augmented views per image (SupCon's two crops).

    Args:
        dataset: unbatched ``(image (H, W, C) float32, label)`` examples.
        augmentation: preset name or :class:`Augmentation`; its training transform makes every view.
        views: views per image.
        batch_size: images per batch.
        seed: seed of the views (offset as in :meth:`Augmentation.apply`).
        drop_remainder: drop the last incomplete batch.

    Returns:
        A dataset of ``(images (batch_size * views, H', W', C), labels (batch_size * views, ...))``, the
        views of one image adjacent and its label repeated.
    """
    preset = get_augmentation(augmentation)
    seeds = tf.data.Dataset.random(seed=seed + AUGMENT_SEED_OFFSET, rerandomize_each_iteration=True).batch(2)

    def stack(example, s):
        image, label = example
        return tf.stack([preset.train(image, v) for v in split_seed(s, views)]), tf.stack([label] * views)

    def flatten(x, y):
        return tf.reshape(x, (-1, *x.shape[2:])), tf.reshape(y, (-1, *y.shape[2:]))

    dataset = tf.data.Dataset.zip((dataset, seeds)).map(stack, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.batch(batch_size, drop_remainder=drop_remainder).map(flatten, num_parallel_calls=tf.data.AUTOTUNE)
