"""A user's own folder of images as a dataset (Keras's convention: one sub-folder per class).

Layout: ``FOLDER/<class>/<image>`` gives one split, ``"train"``; ``FOLDER/train/<class>/...`` next to
``FOLDER/test/<class>/...`` gives ``"train"`` and ``"test"`` (the two must have the same class
folders). Class names are the folder names, kept exactly (spaces, accents) and ordered by ``sorted()``,
as Keras orders them; label ``i`` is ``class_names[i]``. Images are PNG, JPEG, BMP, GIF (its first
frame) and WebP (decoded as RGB or RGBA), found by extension (any case) and decoded by TensorFlow
(``tf.io.decode_image``).

Size and channels, when not given: the most common ``(height, width)`` of the folder's images (ties:
the larger area, then the larger height); gray (1 channel) when every image is stored gray, else RGB
(3; GIFs decode as RGB). Other sizes are resized to it, bilinear with antialiasing
(``tf.image.resize(..., antialias=True)``), stretched to the exact size (the aspect ratio is not
kept), rounded to ``uint8``. Gray images are repeated to RGB; with ``channels=1`` colour images become
their luma (``tf.image.rgb_to_grayscale``'s weights 0.2989, 0.5870, 0.1140), rounded. An alpha channel
is dropped (not composited); a 16-bit PNG keeps its high byte (``value // 256``, TensorFlow's decoder).

A folder is read once per process and settings (``image_size``, ``channels``): every image is decoded in
parallel by ``tf.data`` (twice when the size or the channels are inferred: a first pass reads every
image's size), the arrays are kept in memory, and a summary is printed once to stdout (classes, images
per split, the size and channels chosen and why, how many images were resized or converted, what was
skipped). :func:`folder_summary` returns it as a dict. Nothing is ever written into the folder.

Bad folders (the table in ``docs/datasets.md``): errors stop the read; warnings are printed in the
summary and counted in the record.

- path missing / not a folder: ``FileNotFoundError`` / ``NotADirectoryError``.
- no class sub-folder (an empty folder, or only files): ``DataFormatError``.
- a single class (once classes without images are skipped): ``DataFormatError`` (a classifier needs two).
- ``train/`` and ``test/`` with different class folders: ``DataFormatError`` naming the differences.
- no image file, or none that decodes: ``DataFormatError``.
- a class folder without a decodable training image (none there, or none that decodes): ``DataFormatError``
  naming it and why; with ``drop_empty_classes=True``, a warning and the class is skipped (with its test images).
- a file that does not decode (corrupt, truncated, another format under an image extension): warning;
  skipped, counted, the first few named.
- a file that is not PNG/JPEG/BMP/GIF/WebP (``.txt``, ``Thumbs.db``): skipped, counted by extension.
- a hidden file or folder (name starting with ``.``: ``.DS_Store``, ``.ipynb_checkpoints``): skipped, counted.
- a file directly in the folder (or in ``train/``, ``test/``), an entry next to ``train/`` and
  ``test/`` (``val/``): warning; skipped, counted, named (the hold-out is drawn from ``train/``).
- sub-folders inside a class folder: read recursively with their class (as Keras), counted.
- a symlink to a file or a folder: followed. A symlink to a folder above it (a cycle): warning, not
  followed. A broken symlink: warning, skipped. One real file reached by several paths (a class folder
  linked as another, links across classes, into test/): warning, named; read once in its class, left out
  of both classes when reached from two, left out of test/ when also in train/; never on both sides of a split.
- an alpha channel / a 16-bit PNG: alpha dropped / high byte kept, counted.
- gray and colour images mixed: converted to the chosen channels, counted.
"""

import dataclasses
import os
from typing import TYPE_CHECKING

import numpy as np

from keras_capsules import errors
from keras_capsules.datasets import holdout as hold_out
from keras_capsules.datasets.folder_fingerprint import fingerprint
from keras_capsules.datasets.folder_report import summary_lines
from keras_capsules.datasets.folder_scan import IMAGE_EXTENSIONS, NAMED, scan_folder, skipped_words
from keras_capsules.datasets.folder_settings import check_settings, inferred
from keras_capsules.datasets.formats import DataFormatError
from keras_capsules.datasets.loaders import from_arrays, load_arrays
from keras_capsules.datasets.registry import DatasetInfo, available, get_info, register_dataset

if TYPE_CHECKING:
    import tensorflow as tf

__all__ = ["IMAGE_EXTENSIONS", "folder_summary", "from_directory", "register_folder"]

#: How images of another size are brought to the chosen one (recorded in the summary).
RESIZE_METHOD = "bilinear with antialias (tf.image.resize), stretched to the exact size, rounded to uint8"
SUBSETS = ("train", "validation", "test")
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: Read folders by ``(absolute path, image_size, channels)``.
_READ: "dict[tuple, _Folder]" = {}


@dataclasses.dataclass(frozen=True)
class _Folder:
    """A folder read with given settings: its arrays per split, its record, and its registrations by name."""

    class_names: tuple
    arrays: dict
    record: dict
    default_name: str
    infos: dict = dataclasses.field(default_factory=dict)


def _decoded(paths, convert=None):
    """Decodes ``paths`` in parallel (``tf.data``), skipping the files that fail.

    Args:
        paths: file paths, ``(N,)``.
        convert: ``uint8 (h, w, c) -> uint8 (H, W, C)`` applied to each image, or ``None`` (sizes only).

    Returns:
        ``(ok, stored, images)``: ``bool (N,)`` the files decoded; ``int64 (N, 4)`` their stored
        ``(height, width, channels, 16-bit)``; ``uint8 (N, H, W, C)`` the converted images (``None``
        without ``convert``). Rows of files that failed are zeros.
    """
    import tensorflow as tf

    def read(index, path):
        contents = tf.io.read_file(path)
        image = tf.io.decode_image(contents, expand_animations=False)  # uint8 (h, w, 1..4); 16-bit PNG: the high byte
        header = tf.strings.join([tf.strings.substr(contents, 0, 25), b"\0" * 25])  # a PNG's bit depth is byte 24
        sixteen_bit = (tf.strings.substr(header, 0, 8) == _PNG_SIGNATURE) & (
            tf.strings.substr(header, 24, 1) == b"\x10"
        )
        stored = tf.concat([tf.cast(tf.shape(image), tf.int64), [tf.cast(sixteen_bit, tf.int64)]], axis=0)
        return (index, stored) if convert is None else (index, stored, convert(image))

    dataset = tf.data.Dataset.from_tensor_slices((np.arange(len(paths)), list(paths)))
    dataset = dataset.map(read, num_parallel_calls=tf.data.AUTOTUNE).ignore_errors().batch(256)
    ok = np.zeros(len(paths), dtype=bool)
    stored = np.zeros((len(paths), 4), dtype=np.int64)
    images = None
    for batch in dataset.as_numpy_iterator():
        index = batch[0]
        ok[index], stored[index] = True, batch[1]
        if convert is not None:
            if images is None:
                images = np.zeros((len(paths), *batch[2].shape[1:]), dtype=np.uint8)
            images[index] = batch[2]
    return ok, stored, images


def _to_uint8(image):
    import tensorflow as tf

    return tf.cast(tf.clip_by_value(tf.round(image), 0.0, 255.0), tf.uint8)


def _converter(size, channels):
    """``uint8 (h, w, 1..4) -> uint8 (*size, channels)``: alpha dropped, gray <-> RGB, then resized when the size differs."""
    import tensorflow as tf

    def convert(image):
        color = tf.shape(image)[-1] >= 3
        if channels == 3:
            image = tf.cond(color, lambda: image[..., :3], lambda: tf.repeat(image[..., :1], 3, axis=-1))
        else:
            luma = lambda: _to_uint8(tf.image.rgb_to_grayscale(tf.cast(image[..., :3], tf.float32)))  # noqa: E731
            image = tf.cond(color, luma, lambda: image[..., :1])
        same_size = tf.reduce_all(tf.shape(image)[:2] == size)

        def resized():
            return _to_uint8(tf.image.resize(tf.cast(image, tf.float32), size, method="bilinear", antialias=True))

        return tf.ensure_shape(tf.cond(same_size, lambda: image, resized), (*size, channels))

    return convert


def _read_folder(path, image_size, channels, owner, drop_empty_classes=False):
    """The :class:`_Folder` of ``path`` with these settings: read (and the summary printed) on the first call only."""
    if not isinstance(path, (str, os.PathLike)):
        errors.fail(owner, "path", "a folder path (str or os.PathLike)", path, TypeError)
    image_size, channels = check_settings(owner, image_size, channels)
    path = os.path.abspath(os.fspath(path))
    key = (path, image_size, channels, bool(drop_empty_classes))
    if key not in _READ:
        _READ[key] = _read(path, image_size, channels, owner, _default_name(*key), bool(drop_empty_classes))
        print("\n".join(summary_lines(_READ[key].record)), flush=True)
    return _READ[key]


def _read(path, image_size, channels, owner, default_name, drop_empty_classes):
    """Scans and decodes the folder ``path``: its :class:`_Folder` (arrays per split, the record), registered as nothing yet."""
    scan = scan_folder(path, owner)
    splits = tuple(scan.files)
    paths = [file for split in splits for file, _ in scan.files[split]]
    split_of = np.concatenate([np.full(len(scan.files[split]), i) for i, split in enumerate(splits)])
    labels = np.array([label for split in splits for _, label in scan.files[split]], dtype=np.int32)
    reasons = ("given", "given")
    if image_size is None or channels is None:
        ok, stored, _ = _decoded(paths)
        if not ok.any():
            _none_decode(owner, path, paths)
        image_size, channels, *reasons = inferred(stored[ok], image_size, channels)
    ok, stored, images = _decoded(paths, _converter(image_size, channels))
    for index in np.flatnonzero(~ok):
        scan.skip("undecodable", paths[index])
    if not ok.any():
        _none_decode(owner, path, paths)
    # Classes without a decoded training image are skipped, with their test images.
    trained = np.bincount(labels[ok & (split_of == 0)], minlength=len(scan.class_folders)) > 0
    empty = [name for name, kept in zip(scan.class_folders, trained) if not kept]
    if empty and not drop_empty_classes:
        _empty_classes(
            owner, path, scan, empty, [p for p, split in zip(paths, split_of) if split == 0], labels[split_of == 0]
        )
    class_names = tuple(name for name, kept in zip(scan.class_folders, trained) if kept)
    if len(class_names) < 2:
        raise DataFormatError(
            f"{owner}: argument `path` expected at least 2 class folders with training images (a classifier needs two), "
            f"received {path!r} with images only in {list(class_names)} ({skipped_words(scan)})."
        )
    keep = ok & trained[labels]
    if "test" in splits and not np.any(keep & (split_of == 1)):
        raise DataFormatError(
            f"{owner}: argument `path` expected images in test/'s class folders, received {path!r} whose test/ holds none that decodes."
        )
    new_label = np.cumsum(trained) - 1
    arrays = {}
    for i, split in enumerate(splits):
        rows = keep & (split_of == i)
        split_images, split_labels = images[rows], new_label[labels[rows]].astype(np.int32)
        split_images.flags.writeable = split_labels.flags.writeable = False  # shared by every caller
        arrays[split] = (split_images, split_labels)
    kept = stored[keep]
    record = {
        "path": path,
        "layout": scan.layout,
        "class_names": list(class_names),
        "images": {split: len(arrays[split][1]) for split in splits},
        "images_per_class": {
            split: dict(zip(class_names, np.bincount(arrays[split][1], minlength=len(class_names)).tolist()))
            for split in splits
        },
        "image_size": list(image_size),
        "image_size_from": reasons[0],
        "channels": channels,
        "channels_from": reasons[1],
        "resized": int(np.sum(np.any(kept[:, :2] != image_size, axis=1))),
        "resize_method": RESIZE_METHOD,
        "gray_to_rgb": int(np.sum(kept[:, 2] < 3)) if channels == 3 else 0,
        "rgb_to_gray": int(np.sum(kept[:, 2] >= 3)) if channels == 1 else 0,
        "alpha_dropped": int(np.sum(np.isin(kept[:, 2], (2, 4)))),
        "sixteen_bit": int(np.sum(kept[:, 3])),
        "nested_folders": scan.nested_folders,
        "empty_classes": empty,
        "images_of_empty_classes": int(np.sum(ok & ~trained[labels])),
        "skipped": dict(scan.skipped),
        "skipped_named": {kind: list(names) for kind, names in scan.named.items()},
        "skipped_extensions": dict(scan.extensions),
        "fingerprint": fingerprint(
            path, class_names, [(splits[split_of[i]], paths[i], new_label[labels[i]]) for i in np.flatnonzero(keep)]
        ),
    }
    return _Folder(class_names, arrays, record, default_name)


def _empty_classes(owner, path, scan, empty, train_paths, train_labels):
    """Raises the error of class folders without a readable training image, each named with why."""
    reasons = []
    for name in empty:
        files = [p for p, label in zip(train_paths, train_labels) if scan.class_folders[label] == name]
        reasons.append(
            f"{name!r} holds no image file ({', '.join(IMAGE_EXTENSIONS)})"
            if not files
            else f"none of the {len(files)} image files of {name!r} decodes (e.g. {os.path.relpath(files[0], path)})"
        )
    linked = scan.skipped["linked_across_classes"]
    if linked:
        reasons.append(
            f"{linked} files reached from two classes through symlinks were left out of both "
            f"(e.g. {', '.join(scan.named['linked_across_classes'])})"
        )
    raise DataFormatError(
        f"{owner}: argument `path` expected a readable training image in every class folder, received {path!r} where "
        f"{'; '.join(reasons)}. Add or repair its images, remove the folder, or pass drop_empty_classes=True (CLI: "
        "--drop-empty-classes) to train without these classes."
    )


def _none_decode(owner, path, paths):
    named = ", ".join(os.path.relpath(p, path) for p in paths[:NAMED])
    raise DataFormatError(
        f"{owner}: argument `path` expected images that TensorFlow decodes (PNG, JPEG, BMP, GIF, WebP), received {path!r} whose "
        f"{len(paths)} image files all fail to decode (corrupt, truncated or another format), e.g. {named}."
    )


def _default_name(path, image_size, channels, drop_empty_classes=False):
    """``"folder:<absolute path>"``, with ``"@<h>x<w>"``, ``"@<c>ch"`` and ``"@drop-empty"`` for settings that were given."""
    return (
        f"folder:{path}"
        + (f"@{image_size[0]}x{image_size[1]}" if image_size else "")
        + (f"@{channels}ch" if channels else "")
        + ("@drop-empty" if drop_empty_classes else "")
    )


def register_folder(
    path: str | os.PathLike,
    image_size: tuple | None = None,
    channels: int | None = None,
    name: str | None = None,
    *,
    drop_empty_classes: bool = False,
    owner: str = "datasets.register_folder",
) -> DatasetInfo:
    """Registers the folder of images ``path`` as a dataset, so ``load``, ``load_arrays``, ``class_names`` and ``train`` read it by name.

    The folder is read now (see the module docstring for the layout, the inference, the conversions
    and the bad-folder cases) and once per process: the same folder with the same settings (and
    name) returns the same info.

    Args:
        path: the folder: one sub-folder per class, or ``train/`` and ``test/`` each with one per class.
        image_size: ``(height, width)`` of every image, or ``None``: the most common size.
        channels: ``1`` (gray) or ``3`` (RGB), or ``None``: 1 when every image is gray, else 3.
        name: registry name (default ``"folder:<absolute path>"``, with ``"@<h>x<w>"`` / ``"@<c>ch"`` /
            ``"@drop-empty"`` appended for the settings given).
        drop_empty_classes: skip, with a warning, the class folders without a readable training image
            (default: they are an error naming them).
        owner: the function named in errors.

    Returns:
        Its :class:`~keras_capsules.datasets.registry.DatasetInfo`: ``image_shape (H, W, C)``,
        ``class_names``, ``splits`` ``("train",)`` or ``("train", "test")``, ``stratified_holdout``;
        ``info.arrays(split, data_dir, download)`` returns the split's read-only ``uint8 (N, H, W, C)``
        images and ``int32 (N,)`` labels (``data_dir`` and ``download`` are ignored).

    Raises:
        FileNotFoundError, NotADirectoryError, DataFormatError: see the module docstring's table.
        ValueError: ``name`` is already registered for another dataset.
    """
    folder = _read_folder(path, image_size, channels, owner, drop_empty_classes)
    if name is None:
        name = folder.default_name
    elif not isinstance(name, str) or not name:
        errors.fail(owner, "name", "None or a non-empty string", name, TypeError)
    info = folder.infos.get(name)
    if info is not None and name in available() and get_info(name) is info:
        return info
    if info is None:
        splits = tuple(folder.arrays)

        def arrays(split, data_dir=None, download=False):
            del data_dir, download  # the images are the folder's
            return folder.arrays[split]

        counts = ", ".join(f"{split} {len(folder.arrays[split][1])}" for split in splits)
        info = DatasetInfo(
            name,
            (*folder.record["image_size"], folder.record["channels"]),
            len(folder.class_names),
            splits,
            files=f"images (PNG, JPEG, BMP, GIF, WebP) in one sub-folder per class of {folder.record['path']}",
            folders=(),
            arrays=arrays,
            description=f"your images in {folder.record['path']}: {len(folder.class_names)} classes, {counts}",
            class_names=folder.class_names,
            stratified_holdout=True,
        )
        folder.infos[name] = info
    return register_dataset(info)


def in_class_order(name: str, class_names, owner: str = "datasets.in_class_order") -> str:
    """The registered folder ``name`` with its labels numbered as ``class_names`` orders them (a model's outputs).

    A folder's labels follow its sorted class folder names; a model trained elsewhere (a preset, another folder)
    numbers its classes its own way. Where the folder's names already stand at their indices in
    ``class_names`` (the same folder, or one holding its first classes), ``name`` is returned; else the same
    images are registered once more as ``"<name>@classes-<hash>"``, each label renumbered to its class's index in
    ``class_names``, and that name is returned.

    Args:
        name: a folder registered by :func:`register_folder`.
        class_names: the names of the classes, in the order of the model's outputs.
        owner: the function or command named in errors.

    Raises:
        ValueError: a class folder whose name is not in ``class_names``, named with the names it may take.
    """
    import hashlib
    import unicodedata

    info, wanted = get_info(name), tuple(class_names)
    held = tuple(info.class_names)
    if held == wanted[: len(held)]:
        return name
    # Names compared in one Unicode form: macOS writes file names decomposed ('e' + accent), Linux as typed.
    index = {unicodedata.normalize("NFC", n): i for i, n in enumerate(wanted)}
    unknown = [n for n in held if unicodedata.normalize("NFC", n) not in index]
    if unknown:
        raise ValueError(
            f"{owner}: the class folders of {folder_summary(name)['path']} expected "
            f"the model's class names {list(wanted)} (one per output, in order), received {unknown} among "
            f"{list(held)}: name each class folder as the model's class it holds."
        )
    digest = hashlib.sha256("\n".join(wanted).encode()).hexdigest()[:8]
    ordered = f"{name}@classes-{digest}"
    if ordered not in available():
        renumbered = np.array([index[unicodedata.normalize("NFC", n)] for n in held], "int32")

        def arrays(split, data_dir=None, download=False):
            images, labels = info.arrays(split, data_dir, download)
            return images, renumbered[labels]

        register_dataset(
            dataclasses.replace(info, name=ordered, classes=len(wanted), class_names=wanted, arrays=arrays)
        )
    return ordered


def folder_summary(name: str) -> dict:
    """The record of the folder registered as ``name`` (what :func:`register_folder` printed), for ``metrics.json``.

    Returns:
        A new dict: ``path``, ``layout``, ``class_names``, ``images`` and ``images_per_class`` per split,
        ``image_size`` / ``channels`` with ``image_size_from`` / ``channels_from`` (``"given"`` or why),
        ``resized`` and ``resize_method``, the conversion counts (``gray_to_rgb``, ``rgb_to_gray``,
        ``alpha_dropped``, ``sixteen_bit``), ``nested_folders``, ``empty_classes`` (skipped, with their
        ``images_of_empty_classes``), ``skipped`` counts by reason with ``skipped_named`` (the first few
        files) and ``skipped_extensions``, and the ``fingerprint`` of the images read
        (:func:`~keras_capsules.datasets.folder_fingerprint.fingerprint`).

    Raises:
        ValueError: ``name`` is not a registered folder.
    """
    for folder in _READ.values():
        if name in folder.infos and name in available() and get_info(name) is folder.infos[name]:
            return _copy(folder.record)
    folders = sorted(n for folder in _READ.values() for n in folder.infos if n in available())
    raise ValueError(
        f"datasets.folder_summary: argument `name` expected the name of a registered folder ({folders or 'none registered'}), received {name!r}."
    )


def _copy(record):
    return {
        key: _copy(value) if isinstance(value, dict) else list(value) if isinstance(value, list) else value
        for key, value in record.items()
    }


def _hold_out_size(validation, training_examples, owner):
    """The hold-out size: ``None`` -> :func:`~keras_capsules.datasets.holdout.default_size`; an int; a fraction, rounded half up."""

    if validation is None:
        return hold_out.default_size(training_examples)
    if errors.is_integer(validation) and 0 <= validation < training_examples:
        return int(validation)
    if errors.is_number(validation) and not errors.is_integer(validation) and 0 < validation < 1:
        examples = int(np.floor(validation * training_examples + 0.5))
        if examples < training_examples:
            return examples
    errors.fail(
        owner,
        "validation",
        f"None (the default, min(5000, N // 10)), a number of images in [0, {training_examples}) or a fraction in (0, 1) that "
        f"leaves a training image (N = {training_examples} training images)",
        validation,
    )


def from_directory(
    path: str | os.PathLike,
    subset: str = "train",
    image_size: tuple | None = None,
    channels: int | None = None,
    batch_size: int = 32,
    validation: int | float | None = None,
    seed: int = 0,
    augment: str | None = None,
    shuffle: bool | None = None,
    drop_empty_classes: bool = False,
) -> "tf.data.Dataset":
    """A folder of images (one sub-folder per class; see the module docstring) as ``load`` serves a dataset.

    Args:
        path: the folder: one sub-folder per class, or ``train/`` and ``test/`` each with one per class.
        subset: ``"train"`` (the training images less the validation hold-out), ``"validation"`` (the
            hold-out) or ``"test"`` (the ``test/`` split).
        image_size: ``(height, width)``, or ``None``: the folder's most common size.
        channels: ``1`` or ``3``, or ``None``: 1 when every image is gray, else 3.
        batch_size: images per batch.
        validation: hold-out size: a number of images, a fraction of the training images in (0, 1)
            (rounded half up), or ``None``: ``min(5000, N // 10)`` as :func:`~keras_capsules.training.train`.
            Stratified by class (:func:`~keras_capsules.datasets.holdout.stratified_split_indices`)
            with the fixed ``VALIDATION_SEED``, whatever ``seed``: the images ``train`` holds out of this
            folder with ``validation_examples`` of the same size.
        seed: seed of the shuffle and of the augmentation.
        augment: name of an augmentation preset or ``None`` (its training transform for ``"train"``).
        shuffle: shuffle every epoch (default: for ``"train"`` only).
        drop_empty_classes: as :func:`register_folder`.

    Returns:
        Batched, prefetched ``(image float32 (B, H, W, C) in [0, 1], label int32 (B,))``, with the
        attribute ``class_names`` (a tuple in label order), as ``keras.utils.image_dataset_from_directory``.
    """

    owner = "datasets.from_directory"
    errors.check_one_of(owner, "subset", subset, SUBSETS)
    info = register_folder(path, image_size, channels, drop_empty_classes=drop_empty_classes, owner=owner)
    if subset == "test":
        if "test" not in info.splits:
            errors.fail(
                owner,
                "subset",
                f"'train' or 'validation' for {path!r}, which has no train/ and test/ sub-folders",
                subset,
            )
        images, labels = load_arrays(info.name, "test")
    else:
        images, labels = load_arrays(info.name, "train")
        examples = _hold_out_size(validation, len(labels), owner)
        if subset == "validation" and examples == 0:
            errors.fail(
                owner,
                "validation",
                f"a hold-out of at least one image for subset='validation' ({len(labels)} training images)",
                validation,
            )
        train_indices, validation_indices = hold_out.stratified_split_indices(labels, examples)
        rows = train_indices if subset == "train" else validation_indices
        images, labels = images[rows], labels[rows]
    training = subset == "train"
    dataset = from_arrays(
        images,
        labels,
        batch_size=batch_size,
        augment=augment,
        training=training,
        seed=seed,
        shuffle=training if shuffle is None else bool(shuffle),
    )
    dataset.class_names = info.class_names
    return dataset
