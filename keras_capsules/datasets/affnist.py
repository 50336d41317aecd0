"""affNIST (Tieleman 2013): MNIST digits under random affine transforms on 40x40, read from the official ``.mat`` files.

affNIST is not in TFDS and is never downloaded. Put the official files (from
https://www.cs.toronto.edu/~tijmen/affNIST/, "transformed" set, MATLAB format) in ``<data_dir>/affnist/``
(or ``<data_dir>`` itself), in any of these forms for a split (``test``, ``training``, ``validation``):

- ``test.mat`` (the content of ``test.mat.zip``) or ``test.mat.zip`` itself,
- ``test_batches/1.mat ... 32.mat`` or ``test_batches.zip`` itself.

Each file holds a struct ``affNISTdata`` with ``image`` (1600 x N, row-major 40x40 uint8) and
``label_int`` (1 x N). Reading them needs ``scipy`` (the ``keras-capsules[mat]`` extra). The capsule papers
train on ``expanded_mnist`` (40x40 translated MNIST, see :mod:`keras_capsules.datasets.derived`) and test on
affNIST ``test``.
"""

import os
import re
import zipfile

import numpy as np

from keras_capsules.datasets import formats
from keras_capsules.datasets.registry import DatasetInfo, register_dataset

#: split name -> the official file stem.
FILE_STEMS = {"test": "test", "train": "training", "validation": "validation"}


def _batch_number(name):
    match = re.fullmatch(r"(\d+)\.mat", os.path.basename(name))
    return int(match.group(1)) if match else None


def _read_parts(parts):
    images, labels = zip(*parts)
    return np.concatenate(images), np.concatenate(labels)


def read_affnist_folder(folder, split):
    """``(images uint8 (N, 40, 40, 1), labels int32)`` from the official files in ``folder``, or ``None``."""
    stem = FILE_STEMS[split]
    single = os.path.join(folder, f"{stem}.mat")
    if os.path.isfile(single):
        return formats.read_affnist_mat(formats.read_bytes(single), single)
    batches = os.path.join(folder, f"{stem}_batches")
    if os.path.isdir(batches):
        names = sorted((n for n in os.listdir(batches) if _batch_number(n) is not None), key=_batch_number)
        if names:
            paths = [os.path.join(batches, n) for n in names]
            return _read_parts(formats.read_affnist_mat(formats.read_bytes(p), p) for p in paths)
    for archive in (os.path.join(folder, f"{stem}.mat.zip"), os.path.join(folder, f"{stem}_batches.zip")):
        if os.path.isfile(archive):
            try:
                with zipfile.ZipFile(archive) as zipped:
                    names = sorted(
                        (n for n in zipped.namelist() if n.endswith(".mat")), key=lambda n: _batch_number(n) or 0
                    )
                    if not names:
                        raise formats.DataFormatError(f"datasets.load: {archive!r} holds no .mat file; re-download it.")
                    return _read_parts(formats.read_affnist_mat(zipped.read(n), f"{archive}:{n}") for n in names)
            except (zipfile.BadZipFile, OSError, EOFError) as error:
                raise formats.DataFormatError(
                    f"datasets.load: {archive!r} is not a readable zip file ({error}); re-download it."
                ) from None
    return None


register_dataset(
    DatasetInfo(
        "affnist",
        (40, 40, 1),
        10,
        ("train", "validation", "test"),
        files="the official affNIST files test.mat (or test.mat.zip, test_batches/1..32.mat, test_batches.zip; "
        "training* / validation* for the other splits)",
        folders=("affnist", "affNIST", ""),
        read_folder=read_affnist_folder,
        description="affNIST transformed test set (320,000 40x40 images); train with expanded_mnist",
    )
)
