"""``load(name, ...)``: batched, prefetched ``tf.data`` pipelines of ``(image, label)`` (TensorFlow-specific).

Resolution order for a dataset: an explicit ``data_dir`` or ``$KERAS_CAPSULES_DATA`` holding the
standard files, then the TFDS cache, then a TFDS download only when ``download=True``. When nothing is
found the error names the files expected and where to put them, without touching the network.
"""

import os
from typing import TYPE_CHECKING

import numpy as np

from keras_capsules import errors

# Importing the dataset modules registers them.
from keras_capsules.datasets import affnist, derived, smallnorb, standard  # noqa: F401
from keras_capsules.datasets.augment import get_augmentation
from keras_capsules.datasets.registry import (
    available,
    check_data_dir,
    check_options,
    check_split,
    get_info,
    resolve_arrays,
)

if TYPE_CHECKING:
    import tensorflow as tf

__all__ = ["available", "first_examples", "from_arrays", "info", "load", "load_arrays", "num_classes"]


def info(name):
    """The :class:`~keras_capsules.datasets.registry.DatasetInfo` of ``name`` (shape, classes, splits, files)."""
    return get_info(name)


def num_classes(name):
    """Number of classes of dataset ``name``."""
    return get_info(name).classes


def load_arrays(name, split="train", data_dir=None, download=False, seed=0, **options):
    """Loads a whole split as NumPy arrays.

    Args:
        name: see :func:`available` (e.g. ``"mnist_sample"``, embedded and offline).
        split: one of the dataset's splits (``info(name).splits``). For ``"mnist_sample"`` the 10,000
            embedded MNIST test images are split into 8,000 train and 2,000 test images.
        data_dir: folder with the standard files (directly or in a sub-folder such as ``mnist``).
            MNIST and Fashion-MNIST files are served only when their contents are the official
            ones (option ``verify=False`` serves other IDX files under those names).
        download: allow a TFDS download when no local copy exists.
        seed: derived sets only: the draw of the (fixed) examples.
        **options: dataset options (derived sets: ``base``, ``pairs_per_image``, ``pad``, ``shift``, ...).

    Returns:
        ``(images, labels)``: ``uint8 (N, H, W, C)`` and ``int32 (N,)`` (``float32 (N, classes)``
        multi-hot for multi-label sets).
    """
    dataset_info = get_info(name)
    check_split(dataset_info, split)
    check_data_dir(data_dir)
    options = check_options(dataset_info, options)
    if dataset_info.pipeline is None:
        return resolve_arrays(dataset_info, split, data_dir, download, **options)
    dataset, _ = dataset_info.pipeline(split, data_dir, download, seed, False, None, **options)
    images, labels = zip(*dataset.batch(4096).as_numpy_iterator())
    return np.concatenate(images), np.concatenate(labels)


def first_examples(name, images, labels, limit):
    """``(images, labels)`` cut to ``limit`` examples of dataset ``name`` (``None``: all): its first ones.

    A folder of images (``info(name).stratified_holdout``) lists its classes one after another, so its first
    examples would be its first classes: it keeps ``limit`` examples drawn class by class in proportion
    instead (the hold-out's stratified draw, :func:`~keras_capsules.datasets.holdout.stratified_split_indices`),
    in the folder's order. ``images`` may be any array indexed like ``labels`` (indices, say).
    """
    if limit is None or limit >= len(labels):
        return images, labels
    if get_info(name).stratified_holdout:
        from keras_capsules.datasets import holdout

        kept = holdout.stratified_split_indices(labels, int(limit))[1]
        return images[kept], labels[kept]
    return images[:limit], labels[:limit]


def load(
    name: str,
    split: str = "train",
    batch_size: int = 32,
    data_dir: str | os.PathLike | None = None,
    download: bool = False,
    shuffle: bool | None = None,
    seed: int = 0,
    limit: int | None = None,
    drop_remainder: bool = False,
    augment: str | None = None,
    training: bool | None = None,
    **options,
) -> "tf.data.Dataset":
    """A batched, prefetched ``tf.data.Dataset`` of ``(image float32, label)``.

    Args:
        name: see :func:`available`.
        split: one of ``info(name).splits`` (``"train"``/``"test"``; smallNORB also has the
            ``azimuth_*`` / ``elevation_*`` novel-viewpoint splits).
        batch_size: examples per batch.
        data_dir: folder with the standard files (else ``$KERAS_CAPSULES_DATA``, then TFDS).
        download: allow a TFDS download.
        shuffle: shuffle each epoch (default: only training splits), deterministically from ``seed``.
        seed: seed of the shuffle, of the augmentation and of derived sets.
        limit: keep only the first ``limit`` examples (derived sets: base digits; a folder of images: ``limit``
            drawn class by class, :func:`first_examples`).
        drop_remainder: drop the last incomplete batch.
        augment: name of an augmentation preset (see
            :func:`~keras_capsules.datasets.augment.available_augmentations`) or ``None``.
        training: apply the preset's random training transform (default: for training splits) or
            its deterministic evaluation transform.
        **options: dataset options (see ``info(name).options``).

    Images are in [0, 1] (standardising presets excepted); labels are ``int32`` class indices, or
    ``float32`` multi-hot vectors for multi-label sets (``info(name).multi_label``).
    """
    import tensorflow as tf

    if not errors.is_integer(batch_size) or batch_size < 1:
        raise ValueError(f"datasets.load: argument `batch_size` expected a positive integer, received {batch_size!r}.")
    if limit is not None and (not errors.is_integer(limit) or limit < 1):
        raise ValueError(f"datasets.load: argument `limit` expected None or a positive integer, received {limit!r}.")
    dataset_info = get_info(name)
    check_split(dataset_info, split)
    check_data_dir(data_dir)
    options = check_options(dataset_info, options)
    preset = None if augment is None else get_augmentation(augment)
    training = dataset_info.training_split(split) if training is None else bool(training)
    shuffle = dataset_info.training_split(split) if shuffle is None else bool(shuffle)
    if dataset_info.pipeline is None:
        images, labels = resolve_arrays(dataset_info, split, data_dir, download, **options)
        images, labels = first_examples(name, images, labels, limit)
        dataset = tf.data.Dataset.from_tensor_slices((images, labels))
        if shuffle:
            dataset = dataset.shuffle(len(images), seed=seed, reshuffle_each_iteration=True)
    else:
        dataset, _ = dataset_info.pipeline(split, data_dir, download, seed, shuffle, limit, **options)

    return _scaled_transformed_batched(dataset, preset, training, seed, batch_size, drop_remainder)


def from_arrays(
    images,
    labels,
    batch_size=32,
    augment=None,
    training=False,
    seed=0,
    shuffle=False,
    drop_remainder=False,
    classes=None,
):
    """Arrays in :func:`load_arrays`' form as :func:`load` serves them: a batched ``tf.data.Dataset``.

    The labels are checked here, where their values are visible: a model compiled on the returned
    dataset cannot check them (they are traced into its graph).

    Args:
        images, labels: ``uint8 (N, H, W, C)`` and ``(N, ...)``, e.g. part of a :func:`load_arrays` split.
            Class indices ``(N,)``/``(N, 1)`` must be whole numbers: float labels such as 2.7 are refused
            (``2.0`` is accepted), where ``fit`` would truncate them to class 2 in silence. They must be
            ``>= 0``, and ``< classes`` when ``classes`` is given (losses read -1 or 10..17 of 10 classes
            as no class and train to a NaN loss). Multi-hot targets ``(N, classes)`` are not checked.
        batch_size: examples per batch.
        augment: name of an augmentation preset or ``None``.
        training: apply the preset's random training transform instead of its evaluation transform.
        seed: seed of the training transform and of the shuffle.
        shuffle: shuffle the examples each epoch (deterministically from ``seed``), as :func:`load`
            does for training splits.
        drop_remainder: drop the last incomplete batch.
        classes: the number of classes (e.g. :func:`num_classes` of the dataset), or ``None``: unknown,
            only negative class indices are refused.

    Returns:
        ``(image float32, label)`` batches (in order unless ``shuffle``): images in [0, 1], then the preset's transform
        (e.g. ``"cifar24"``'s central 24x24 crop for evaluation), as :func:`load` gives the same split.
    """
    import tensorflow as tf

    if not errors.is_integer(batch_size) or batch_size < 1:
        raise ValueError(
            f"datasets.from_arrays: argument `batch_size` expected a positive integer, received {batch_size!r}."
        )
    if classes is not None:
        classes = errors.check_positive_int("datasets.from_arrays", "classes", classes)
    label_values = errors.concrete_value(labels)
    if (
        label_values is not None
        and label_values.dtype.kind in "iuf"
        and (label_values.ndim == 1 or label_values.shape[1:] == (1,))
    ):
        errors.check_whole_labels("datasets.from_arrays", "labels", label_values)
        errors.check_label_range("datasets.from_arrays", "labels", label_values, classes)
    preset = None if augment is None else get_augmentation(augment)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    if shuffle:
        dataset = dataset.shuffle(len(images), seed=seed, reshuffle_each_iteration=True)
    return _scaled_transformed_batched(dataset, preset, bool(training), seed, batch_size, drop_remainder)


def _scaled_transformed_batched(dataset, preset, training, seed, batch_size, drop_remainder):
    """Unbatched ``(uint8 image, label)`` examples -> images in [0, 1] -> the preset's transform -> prefetched batches."""
    import tensorflow as tf

    def to_float(x, y):
        return tf.cast(x, tf.float32) / 255.0, y

    if preset is None:
        dataset = dataset.batch(batch_size, drop_remainder=drop_remainder).map(
            to_float, num_parallel_calls=tf.data.AUTOTUNE
        )
    else:
        dataset = preset.apply(dataset.map(to_float, num_parallel_calls=tf.data.AUTOTUNE), training, seed)
        dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    return dataset.prefetch(tf.data.AUTOTUNE)
