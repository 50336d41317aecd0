"""The dataset registry and the shared resolution rule: local files, then the TFDS cache, then a clear error.

A dataset is registered with a :class:`DatasetInfo`. Array datasets provide ``read_folder(folder, split,
**options)`` (``None`` when the folder lacks the files) and optionally ``read_tfds(split, download,
**options)``, combined by :func:`resolve_arrays`; or their own ``arrays(split, data_dir, download,
**options)``. Derived datasets provide ``pipeline(split, data_dir, download, seed, shuffle, limit,
**options)`` returning an unbatched ``tf.data.Dataset`` of ``(uint8 image, label)``.
"""

import contextlib
import contextvars
import dataclasses
import os
from typing import Callable, Optional

from keras_capsules.datasets.tfds_source import TfdsNotPrepared, tfds_data_dir

_DATASETS: "dict[str, DatasetInfo]" = {}

#: How error messages tell the user to change a loading argument: as Python keywords, or as the
#: ``keras-capsules`` flags (inside :func:`command_line_spelling`).
_SPELLINGS = {
    "python": {
        "data_dir": "data_dir=...",
        "no_data_dir": "no data_dir given",
        "download": "download=True",
        "download_off": "download=False",
        "verify": "verify=False",
        "sample": "load('mnist_sample', ...)",
        "batch_size": "argument `batch_size`",
    },
    "cli": {
        "data_dir": "--data-dir FOLDER",
        "no_data_dir": "no --data-dir given",
        "download": "--download (train, evaluate, explain)",
        "download_off": "--download was not given",
        "verify": "--dataset-option verify=False (train, evaluate)",
        "sample": "--dataset mnist_sample",
        "batch_size": "--batch-size",
    },
}
_SPELLING = contextvars.ContextVar("keras_capsules_argument_spelling", default="python")


@contextlib.contextmanager
def command_line_spelling():
    """Inside this context, loading errors name the command line's flags instead of Python arguments."""
    token = _SPELLING.set("cli")
    try:
        yield
    finally:
        _SPELLING.reset(token)


def spelled(argument):
    """How to set ``argument`` (``"data_dir"``, ``"download"``, ``"verify"``, ...) in the caller's terms."""
    return _SPELLINGS[_SPELLING.get()][argument]


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
    """What ``load`` needs to know about a dataset.

    Attributes:
        name: registry key.
        image_shape: raw image shape ``(H, W, C)`` before augmentation presets.
        classes: number of classes.
        splits: accepted split names; the first is the training split.
        multi_label: labels are multi-hot ``float32 (classes,)`` instead of ``int32`` indices.
        files: the local files expected, in words (used in errors and docs).
        folders: sub-folders of ``data_dir`` / ``$KERAS_CAPSULES_DATA`` searched (``""``: the folder itself).
        tfds_name: the TFDS dataset used when no local files exist, or ``None``.
        options: accepted keyword options and their defaults.
        read_folder, read_tfds, arrays, pipeline: see the module docstring.
        description: one line.
        class_names: the class names in label order (``classes`` of them); empty: see :func:`class_names`.
        stratified_holdout: ``train``'s validation hold-out takes each class's share
            (:func:`keras_capsules.datasets.holdout.stratified_split_indices`) instead of a uniform draw.
    """

    name: str
    image_shape: tuple
    classes: int
    splits: tuple
    multi_label: bool = False
    files: str = ""
    folders: tuple = ("",)
    tfds_name: Optional[str] = None
    options: dict = dataclasses.field(default_factory=dict)
    read_folder: Optional[Callable] = None
    read_tfds: Optional[Callable] = None
    arrays: Optional[Callable] = None
    pipeline: Optional[Callable] = None
    description: str = ""
    class_names: tuple = ()
    stratified_holdout: bool = False

    def training_split(self, split):
        """Whether ``split`` is a training split (random augmentation, shuffled by default)."""
        return split == self.splits[0] or split.endswith("_train")


_DIGITS = tuple(str(digit) for digit in range(10))
#: Class names of the built-in datasets, in label order (the names their publishers give).
BUILTIN_CLASS_NAMES = {
    "mnist": _DIGITS,
    "mnist_sample": _DIGITS,
    "affnist": _DIGITS,
    "svhn": _DIGITS,  # label 10 of the .mat files is read as digit 0
    "fashion_mnist": (
        "T-shirt/top",
        "Trouser",
        "Pullover",
        "Dress",
        "Coat",
        "Sandal",
        "Shirt",
        "Sneaker",
        "Bag",
        "Ankle boot",
    ),
    "cifar10": ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"),
    "cifar100": tuple(
        "apple aquarium_fish baby bear beaver bed bee beetle bicycle bottle bowl boy bridge bus butterfly camel can castle "
        "caterpillar cattle chair chimpanzee clock cloud cockroach couch crab crocodile cup dinosaur dolphin elephant flatfish "
        "forest fox girl hamster house kangaroo keyboard lamp lawn_mower leopard lion lizard lobster man maple_tree motorcycle "
        "mountain mouse mushroom oak_tree orange orchid otter palm_tree pear pickup_truck pine_tree plain plate poppy porcupine "
        "possum rabbit raccoon ray road rocket rose sea seal shark shrew skunk skyscraper snail snake spider squirrel streetcar "
        "sunflower sweet_pepper table tank telephone television tiger tractor train trout tulip turtle wardrobe whale willow_tree "
        "wolf woman worm".split()
    ),  # the fine labels (CIFAR-100's meta file, fine_label_names)
    "smallnorb": ("animal", "human", "airplane", "truck", "car"),
}


def register_dataset(info):
    """Registers ``info`` under ``info.name`` (its ``class_names``, when given, must name every class)."""
    if info.name in _DATASETS:
        raise ValueError(f"register_dataset: dataset {info.name!r} is already registered.")
    if not info.class_names and info.name in BUILTIN_CLASS_NAMES:
        info = dataclasses.replace(info, class_names=BUILTIN_CLASS_NAMES[info.name])
    if info.class_names and len(info.class_names) != info.classes:
        raise ValueError(
            f"register_dataset: argument `class_names` of dataset {info.name!r} expected {info.classes} names (one per class), "
            f"received {len(info.class_names)}."
        )
    _DATASETS[info.name] = info
    return info


def class_names(name: str) -> tuple[str, ...]:
    """The class names of dataset ``name`` in label order: ``class_names("fashion_mnist")[0] == "T-shirt/top"``.

    A derived set (``expanded_mnist``, ``multi_mnist``, ...) has the names of its default source (its
    ``base`` option); a registered dataset without names has ``"0"``, ``"1"``, ... .

    Returns:
        A tuple of ``info.classes`` strings.

    Raises:
        ValueError: ``name`` is not a registered dataset.
    """
    if not isinstance(name, str) or name not in _DATASETS:
        _unknown("class_names", name)
    info = _DATASETS[name]
    if info.class_names:
        return tuple(info.class_names)
    base = info.options.get("base")
    if base is not None and base != name and get_info(base).classes == info.classes:
        return class_names(base)
    return tuple(str(label) for label in range(info.classes))


def available():
    """Dataset names ``load`` understands, sorted."""
    return sorted(_DATASETS)


def get_info(name):
    """The :class:`DatasetInfo` of ``name``."""
    if name not in _DATASETS:
        _unknown("load", name)
    return _DATASETS[name]


def _unknown(function, name):
    raise ValueError(f"datasets.{function}: argument `name` expected one of {available()}, received {name!r}.")


def check_split(info, split):
    if split not in info.splits:
        raise ValueError(
            f"datasets.load: argument `split` expected one of {info.splits} for dataset {info.name!r}, received {split!r}."
        )


def check_options(info, options):
    """Fills defaults and rejects unknown options."""
    unknown = sorted(set(options) - set(info.options))
    if unknown:
        raise ValueError(
            f"datasets.load: dataset {info.name!r} got unknown options {unknown}; accepted: {sorted(info.options) or 'none'}."
        )
    return {**info.options, **options}


def check_data_dir(data_dir):
    """Checks that ``data_dir`` is ``None`` or a path (``str`` or ``os.PathLike``)."""
    if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(
            f"datasets.load: argument `data_dir` expected None or a folder path (str or os.PathLike), received {data_dir!r}."
        )
    return data_dir


def local_roots(data_dir):
    """Folders searched for local files: ``data_dir`` then ``$KERAS_CAPSULES_DATA``."""
    check_data_dir(data_dir)
    return [os.fspath(root) for root in (data_dir, os.environ.get("KERAS_CAPSULES_DATA")) if root]


def resolve_arrays(info, split, data_dir, download, **options):
    """Reads ``split`` from local files, else from TFDS, else raises a ``FileNotFoundError`` naming the files."""
    if info.arrays is not None:
        return info.arrays(split, data_dir, download, **options)
    searched = []
    for root in local_roots(data_dir):
        for sub in info.folders:
            folder = os.path.join(root, sub) if sub else root
            if folder in searched:
                continue
            searched.append(folder)
            if os.path.isdir(folder):
                found = info.read_folder(folder, split, **options)
                if found is not None:
                    return found
    reason = None
    if info.read_tfds is not None:
        try:
            return info.read_tfds(split, download, **options)
        except TfdsNotPrepared as error:
            reason = str(error)
    raise missing_error(info, split, searched, reason)


def missing_error(info, split, searched, reason=None):
    """The ``FileNotFoundError`` raised when a dataset has no local files and no TFDS copy."""
    where = (
        "\n".join(f"  - {folder}" for folder in searched)
        or f"  ({spelled('no_data_dir')} and $KERAS_CAPSULES_DATA is not set)"
    )
    lines = [
        f"datasets.load: dataset {info.name!r} ({split} split) was not found and {spelled('download_off')}.",
        f"Expected {info.files} in one of:\n{where}",
        f"Put them in a folder (or a sub-folder named {[f for f in info.folders if f]}) and pass {spelled('data_dir')} "
        "or set KERAS_CAPSULES_DATA.",
    ]
    if info.tfds_name:
        lines.append(
            f"Or prepare the TFDS dataset {info.tfds_name!r} in {tfds_data_dir()} (`tfds build {info.tfds_name}` on a "
            f"machine with network, then copy the folder; or set TFDS_DATA_DIR), or pass {spelled('download')}."
        )
    if reason:
        lines.append(f"({reason})")
    if info.name == "mnist":
        lines.append(f"The embedded offline sample is available as {spelled('sample')}.")
    return FileNotFoundError("\n".join(lines))
