"""Datasets built from MNIST on the fly, deterministic per seed (TensorFlow ``tf.data``).

- ``expanded_mnist``: each digit zero-padded to 40x40 and translated by up to 6 px in each direction
  (Sabour et al. 2017, the training set of the affNIST experiment).
- ``multi_mnist``: two digits of different classes, each shifted by up to 4 px in each direction on a
  36x36 canvas and overlaid with ``min(a + b, 255)``; multi-hot labels (Sabour et al. 2017).
- ``diverse_multi_mnist``: with probability 1/6 a single shifted digit, else a ``multi_mnist``
  overlay (Tsai et al. 2020, App. B.2); multi-hot labels with one or two ones.

Randomness is stateless: test splits draw example ``i`` from ``(seed, i)``, so they are identical in
every epoch and run; training splits draw from a seeded stream that changes every epoch. Each base
digit appears ``pairs_per_image`` times per epoch (Sabour's MultiMNIST test set uses 1,000).
"""

import numpy as np
import tensorflow as tf

from keras_capsules.datasets.registry import DatasetInfo, get_info, register_dataset, resolve_arrays


def place(digit, dy, dx, pad, shift):
    """Puts ``digit (h, w, c)`` on a zero canvas ``(h + 2 pad, w + 2 pad, c)`` moved by ``(dy, dx)`` from the centre.

    ``|dy|, |dx| <= shift``; ink that would leave the canvas (only when ``shift > pad``) is cut.
    """
    height, width, channels = digit.shape
    margin = pad + shift
    big = tf.pad(digit, [[margin, margin], [margin, margin], [0, 0]])
    out = tf.slice(big, tf.stack([shift - dy, shift - dx, 0]), [height + 2 * pad, width + 2 * pad, channels])
    return tf.ensure_shape(out, (height + 2 * pad, width + 2 * pad, channels))


def _class_tables(labels, classes):
    """Indices sorted by class, each class's offset and count, and the classes present."""
    order = np.argsort(labels, kind="stable").astype("int32")
    counts = np.bincount(labels, minlength=classes).astype("int32")
    offsets = (np.cumsum(counts) - counts).astype("int32")
    present = np.flatnonzero(counts).astype("int32")
    return order, counts, offsets, present


def derived_examples(
    kind,
    images,
    labels,
    seed=0,
    training=True,
    shuffle=None,
    pairs_per_image=1,
    pad=4,
    shift=4,
    single_probability=1 / 6,
    classes=10,
):
    """The unbatched examples of a derived set with their provenance.

    Args:
        kind: ``"expanded"``, ``"multi"`` or ``"diverse"``.
        images: base digits ``uint8 (N, 28, 28, 1)``; labels ``int (N,)``.
        seed: randomness seed. training: new draws every epoch (else fixed per example).
        shuffle: shuffle the base order each epoch (default: ``training``).
        pairs_per_image: examples per base digit and epoch.
        pad: canvas margin (canvas side = 28 + 2 pad). shift: largest shift per axis.
        single_probability: ``"diverse"`` only: chance of a single digit.

    Returns:
        ``(dataset, size)``: dicts with ``image`` (uint8), ``label`` (int32 for ``expanded``, else
        float32 multi-hot), ``index_a``, ``index_b`` (-1 when there is no second digit),
        ``shift_a``, ``shift_b`` (``(dy, dx)`` int32).
    """
    labels = np.asarray(labels).astype("int32")
    order, counts, offsets, present = _class_tables(labels, classes)
    if kind != "expanded" and len(present) < 2:
        raise ValueError(
            f"datasets.load: dataset {kind}_mnist needs digits of at least 2 classes, received classes {present.tolist()}."
        )
    base_images = tf.constant(images)
    base_labels = tf.constant(labels)
    order, counts, offsets, present = (tf.constant(t) for t in (order, counts, offsets, present))
    size = len(labels) * pairs_per_image

    def make(index, example_seed):
        seeds = tf.unstack(tf.random.experimental.stateless_split(example_seed, 4))
        i = index // pairs_per_image
        label_a = base_labels[i]
        shifts = tf.random.stateless_uniform([4], seeds[0], -shift, shift + 1, dtype=tf.int32)
        first = place(base_images[i], shifts[0], shifts[1], pad, shift)
        if kind == "expanded":
            return {
                "image": first,
                "label": label_a,
                "index_a": i,
                "index_b": tf.constant(-1),
                "shift_a": shifts[:2],
                "shift_b": tf.zeros([2], tf.int32),
            }
        # The partner's class is uniform over the other classes present; its digit uniform within that class.
        position = tf.argmax(tf.cast(tf.equal(present, label_a), tf.int32), output_type=tf.int32)
        step = tf.random.stateless_uniform([], seeds[1], 1, tf.size(present), dtype=tf.int32)
        label_b = present[(position + step) % tf.size(present)]
        j = order[offsets[label_b] + tf.random.stateless_uniform([], seeds[2], 0, counts[label_b], dtype=tf.int32)]
        second = place(base_images[j], shifts[2], shifts[3], pad, shift)
        overlay = tf.cast(tf.minimum(tf.cast(first, tf.int32) + tf.cast(second, tf.int32), 255), tf.uint8)
        multi_hot = tf.one_hot(label_a, classes) + tf.one_hot(label_b, classes)
        single = (
            tf.constant(False) if kind == "multi" else tf.random.stateless_uniform([], seeds[3]) < single_probability
        )
        return {
            "image": tf.where(single, first, overlay),
            "label": tf.where(single, tf.one_hot(label_a, classes), multi_hot),
            "index_a": i,
            "index_b": tf.where(single, -1, j),
            "shift_a": shifts[:2],
            "shift_b": tf.where(single, tf.zeros([2], tf.int32), shifts[2:]),
        }

    indices = tf.data.Dataset.range(size).map(lambda k: tf.cast(k, tf.int32))
    if training if shuffle is None else shuffle:
        indices = indices.shuffle(size, seed=seed, reshuffle_each_iteration=True)
    if training:
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
    else:
        seeds = tf.data.Dataset.range(size).map(lambda k: tf.stack([tf.constant(seed, tf.int64), k]))
    dataset = tf.data.Dataset.zip((indices, seeds)).map(make, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset, size


def _pipeline(kind):
    def pipeline(
        split, data_dir, download, seed, shuffle, limit, base="mnist", pairs_per_image=1, verify=True, **options
    ):
        base_info = get_info(base)
        base_options = {"verify": verify} if "verify" in base_info.options else {}
        images, labels = resolve_arrays(base_info, split, data_dir, download, **base_options)
        if limit is not None:
            images, labels = images[:limit], labels[:limit]
        dataset, size = derived_examples(
            kind,
            images,
            labels,
            seed=seed,
            training=split == "train",
            shuffle=shuffle,
            pairs_per_image=pairs_per_image,
            classes=base_info.classes,
            **options,
        )
        return dataset.map(lambda e: (e["image"], e["label"]), num_parallel_calls=tf.data.AUTOTUNE), size

    return pipeline


_BASE = "MNIST (see 'mnist'; option base='fashion_mnist' or 'mnist_sample' for another base)"
register_dataset(
    DatasetInfo(
        "expanded_mnist",
        (40, 40, 1),
        10,
        ("train", "test"),
        files=_BASE,
        options={"base": "mnist", "verify": True, "pairs_per_image": 1, "pad": 6, "shift": 6},
        pipeline=_pipeline("expanded"),
        description="MNIST padded to 40x40 and randomly translated by up to 6 px (Sabour et al. 2017, affNIST training)",
    )
)
register_dataset(
    DatasetInfo(
        "multi_mnist",
        (36, 36, 1),
        10,
        ("train", "test"),
        multi_label=True,
        files=_BASE,
        options={"base": "mnist", "verify": True, "pairs_per_image": 1, "pad": 4, "shift": 4},
        pipeline=_pipeline("multi"),
        description="two overlaid MNIST digits of different classes, each shifted up to 4 px, 36x36, multi-hot labels (Sabour et al. 2017)",
    )
)
register_dataset(
    DatasetInfo(
        "diverse_multi_mnist",
        (36, 36, 1),
        10,
        ("train", "test"),
        multi_label=True,
        files=_BASE,
        options={
            "base": "mnist",
            "verify": True,
            "pairs_per_image": 1,
            "pad": 4,
            "shift": 4,
            "single_probability": 1 / 6,
        },
        pipeline=_pipeline("diverse"),
        description="1/6 single shifted digits, 5/6 multi_mnist overlays, 36x36, multi-hot labels (Tsai et al. 2020, App. B.2)",
    )
)
