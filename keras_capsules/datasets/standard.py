"""The standard image-classification datasets: the embedded MNIST sample, MNIST, Fashion-MNIST, CIFAR-10/100, SVHN.

Each reads the files as their authors publish them (IDX, CIFAR binary or python batches, SVHN ``.mat``)
from a local folder, or falls back to TFDS (see :mod:`keras_capsules.datasets.registry`).
"""

import os

import numpy as np

from keras_capsules import errors
from keras_capsules.datasets import formats
from keras_capsules.datasets.idx import read_idx, read_idx_with_digest
from keras_capsules.datasets.registry import DatasetInfo, get_info, register_dataset, spelled
from keras_capsules.datasets.tfds_source import tfds_arrays

SAMPLE_DIR = os.path.join(os.path.dirname(__file__), "sample")
SAMPLE_TRAIN_SIZE = 8000


def _find(folder, *names):
    """The first existing ``folder/name`` (also tried with ``.gz``), or ``None``."""
    for name in names:
        for candidate in (name, name + ".gz"):
            path = os.path.join(folder, candidate)
            if os.path.isfile(path):
                return path
    return None


def _supervised_tfds(tfds_name):
    def read(split, download, **options):
        del options  # local-file options (``verify``): TFDS checks its own downloads
        data = tfds_arrays(tfds_name, split, ("image", "label"), download)
        return data["image"].astype("uint8"), data["label"].astype("int32")

    return read


# ------------------------------------------------------------------------------------- IDX sets

IDX_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}

#: SHA-256 of the decompressed official IDX files (``gunzip -c FILE | sha256sum``) -> (dataset, file).
#: MNIST and Fashion-MNIST publish files of identical names and shapes: only the contents tell them apart.
OFFICIAL_IDX = {
    "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db": ("mnist", "train-images-idx3-ubyte"),
    "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5": ("mnist", "train-labels-idx1-ubyte"),
    "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7": ("mnist", "t10k-images-idx3-ubyte"),
    "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2": ("mnist", "t10k-labels-idx1-ubyte"),
    "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888": ("fashion_mnist", "train-images-idx3-ubyte"),
    "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9": ("fashion_mnist", "train-labels-idx1-ubyte"),
    "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b": ("fashion_mnist", "t10k-images-idx3-ubyte"),
    "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34": ("fashion_mnist", "t10k-labels-idx1-ubyte"),
}


def check_official_idx(name, path, stem, digest):
    """Raises :class:`~keras_capsules.datasets.formats.DataFormatError` unless ``path`` is dataset ``name``'s official ``stem`` file."""
    found = OFFICIAL_IDX.get(digest)
    if found == (name, stem):
        return
    if found is not None:
        raise formats.DataFormatError(
            f"datasets.load: {path!r} is {found[0]}'s {found[1]} file, not {name}'s {stem}; dataset {name!r} was asked for. "
            f"Point the data folder at the {name} files (sub-folder {get_info(name).folders[0]!r})."
        )
    raise formats.DataFormatError(
        f"datasets.load: {path!r} is not {name}'s official {stem} file (the SHA-256 of its decompressed contents, "
        f"{digest[:16]}..., matches no published MNIST or Fashion-MNIST file), so it is not served as {name!r}. "
        f"Re-download the official files, or, if this is your own copy on purpose, pass {spelled('verify')}."
    )


def _idx_reader(name):
    """``read_folder(folder, split, verify=True)`` of the IDX dataset ``name``: ``(images uint8 (N, 28, 28, 1), labels int32)`` or ``None``."""

    def read_folder(folder, split, verify=True):
        stems = IDX_FILES[split]
        images_path, labels_path = (_find(folder, stem) for stem in stems)
        if not (images_path and labels_path):
            return None
        (images, images_digest), (labels, labels_digest) = (
            read_idx_with_digest(images_path),
            read_idx_with_digest(labels_path),
        )
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise formats.DataFormatError(
                f"datasets.load: {images_path} holds images of shape {images.shape} and {labels_path} labels of shape "
                f"{labels.shape}; expected (N, 28, 28) and (N,)."
            )
        if len(labels) == 0:
            raise formats.DataFormatError(
                f"datasets.load: {images_path!r} and {labels_path!r} hold no examples (their headers say 0)."
            )
        dataset_info = get_info(name)
        size = tuple(dataset_info.image_shape[:2])
        if images.shape[1:] != size:
            raise formats.DataFormatError(
                f"datasets.load: {images_path!r} holds {images.shape[1]}x{images.shape[2]} images (shape {images.shape}); "
                f"{name!r} images are {size[0]}x{size[1]}, expected shape (N, {size[0]}, {size[1]}). It is not served as "
                f"{name!r}, with or without verify."
            )
        labels = formats.whole_labels(labels, "datasets.load", labels_path)
        check_label_file(name, labels_path, labels)
        if verify:
            check_official_idx(name, images_path, stems[0], images_digest)
            check_official_idx(name, labels_path, stems[1], labels_digest)
        return images[..., None], labels

    return read_folder


def check_label_file(name, path, labels):
    """Refuses the label file ``path`` of dataset ``name`` when a label lies outside its classes ``0..classes-1``.

    Args:
        labels: the file's class indices ``(N,)``, whole numbers.

    Raises:
        DataFormatError: naming the file, the dataset's class range, and the offending labels (a few values and how many).
    """
    classes = get_info(name).classes
    bad = errors.labels_outside(labels, classes)
    if bad.size:
        raise formats.DataFormatError(
            f"datasets.load: argument `data_dir` expected label files with class indices in 0..{classes - 1} (the {classes} classes of "
            f"{name!r}), received {path!r} holding labels outside them: {errors.describe_labels(bad, labels.size)}. It is not served "
            f"as {name!r}, with or without verify."
        )


def read_sample(split, data_dir=None, download=False):
    """The embedded sample: the 10,000 MNIST test images split 8,000 / 2,000."""
    del data_dir, download
    images = read_idx(os.path.join(SAMPLE_DIR, "t10k-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(SAMPLE_DIR, "t10k-labels-idx1-ubyte.gz"))
    part = slice(0, SAMPLE_TRAIN_SIZE) if split == "train" else slice(SAMPLE_TRAIN_SIZE, None)
    return images[part, :, :, None], labels[part].astype("int32")


IDX_DESCRIPTION = "the IDX files {train,t10k}-{images-idx3,labels-idx1}-ubyte(.gz)"

register_dataset(
    DatasetInfo(
        "mnist_sample",
        (28, 28, 1),
        10,
        ("train", "test"),
        files="nothing (it ships inside the package)",
        folders=(),
        arrays=read_sample,
        description="the 10,000 MNIST test images embedded in the package: train = first 8,000, test = last 2,000",
    )
)
register_dataset(
    DatasetInfo(
        "mnist",
        (28, 28, 1),
        10,
        ("train", "test"),
        files=IDX_DESCRIPTION,
        folders=("mnist", "MNIST", ""),
        tfds_name="mnist",
        options={"verify": True},
        read_folder=_idx_reader("mnist"),
        read_tfds=_supervised_tfds("mnist"),
        description="MNIST (LeCun, Cortes, Burges), 60,000 / 10,000",
    )
)
register_dataset(
    DatasetInfo(
        "fashion_mnist",
        (28, 28, 1),
        10,
        ("train", "test"),
        files=IDX_DESCRIPTION,
        folders=("fashion-mnist", "fashion_mnist", "FashionMNIST", ""),
        tfds_name="fashion_mnist",
        options={"verify": True},
        read_folder=_idx_reader("fashion_mnist"),
        read_tfds=_supervised_tfds("fashion_mnist"),
        description="Fashion-MNIST (Zalando), 60,000 / 10,000",
    )
)


# ------------------------------------------------------------------------------------- CIFAR


def _cifar_reader(binary_dir, python_dir, archives, binary_files, python_files, label_bytes, label_index, label_key):
    def read_folder(folder, split):
        for where in (os.path.join(folder, binary_dir), folder):
            paths = [os.path.join(where, name) for name in binary_files[split]]
            if all(os.path.isfile(p) for p in paths):
                parts = [formats.read_cifar_binary(formats.read_bytes(p), label_bytes, label_index, p) for p in paths]
                return _concat(parts)
        for where in (os.path.join(folder, python_dir), folder):
            paths = [os.path.join(where, name) for name in python_files[split]]
            if all(os.path.isfile(p) for p in paths):
                parts = [formats.read_cifar_pickle(formats.read_bytes(p), label_key, p) for p in paths]
                return _concat(parts)
        for archive, names, binary in (
            (archives[0], binary_files[split], True),
            (archives[1], python_files[split], False),
        ):
            path = os.path.join(folder, archive)
            if os.path.isfile(path):
                members = formats.read_members(path, names)
                where = lambda name: f"{path}:{name}"  # noqa: E731
                if binary:
                    parts = [formats.read_cifar_binary(members[n], label_bytes, label_index, where(n)) for n in names]
                else:
                    parts = [formats.read_cifar_pickle(members[n], label_key, where(n)) for n in names]
                return _concat(parts)
        return None

    return read_folder


def _concat(parts):
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


_CIFAR10_BIN = {"train": [f"data_batch_{i}.bin" for i in range(1, 6)], "test": ["test_batch.bin"]}
_CIFAR10_PY = {"train": [f"data_batch_{i}" for i in range(1, 6)], "test": ["test_batch"]}
register_dataset(
    DatasetInfo(
        "cifar10",
        (32, 32, 3),
        10,
        ("train", "test"),
        files="CIFAR-10 as published: cifar-10-batches-bin/{data_batch_1..5,test_batch}.bin, "
        "cifar-10-batches-py/{data_batch_1..5,test_batch}, or the archives cifar-10-binary.tar.gz / cifar-10-python.tar.gz",
        folders=("cifar10", "cifar-10", "CIFAR10", ""),
        tfds_name="cifar10",
        read_folder=_cifar_reader(
            "cifar-10-batches-bin",
            "cifar-10-batches-py",
            ("cifar-10-binary.tar.gz", "cifar-10-python.tar.gz"),
            _CIFAR10_BIN,
            _CIFAR10_PY,
            1,
            0,
            b"labels",
        ),
        read_tfds=_supervised_tfds("cifar10"),
        description="CIFAR-10 (Krizhevsky), 50,000 / 10,000",
    )
)
register_dataset(
    DatasetInfo(
        "cifar100",
        (32, 32, 3),
        100,
        ("train", "test"),
        files="CIFAR-100 as published: cifar-100-binary/{train,test}.bin, cifar-100-python/{train,test}, "
        "or the archives cifar-100-binary.tar.gz / cifar-100-python.tar.gz (fine labels are used)",
        folders=("cifar100", "cifar-100", "CIFAR100", ""),
        tfds_name="cifar100",
        read_folder=_cifar_reader(
            "cifar-100-binary",
            "cifar-100-python",
            ("cifar-100-binary.tar.gz", "cifar-100-python.tar.gz"),
            {"train": ["train.bin"], "test": ["test.bin"]},
            {"train": ["train"], "test": ["test"]},
            2,
            1,
            b"fine_labels",
        ),
        read_tfds=_supervised_tfds("cifar100"),
        description="CIFAR-100 (Krizhevsky), fine labels, 50,000 / 10,000",
    )
)


# ------------------------------------------------------------------------------------- SVHN


def read_svhn_folder(folder, split):
    path = _find(folder, f"{split}_32x32.mat")
    return None if path is None else formats.read_svhn_mat(formats.read_bytes(path), path)


register_dataset(
    DatasetInfo(
        "svhn",
        (32, 32, 3),
        10,
        ("train", "test", "extra"),
        files="the cropped-digit files {train,test,extra}_32x32.mat (labels 10 are read as digit 0)",
        folders=("svhn", "svhn_cropped", "SVHN", ""),
        tfds_name="svhn_cropped",
        read_folder=read_svhn_folder,
        read_tfds=_supervised_tfds("svhn_cropped"),
        description="SVHN cropped digits (Netzer et al.), 73,257 / 26,032 (+ 531,131 extra)",
    )
)
