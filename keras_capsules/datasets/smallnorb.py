"""smallNORB with the standard and the novel-viewpoint splits (LeCun et al. 2004; Hinton et al. 2018 §5.1).

Images are the stereo pair as two channels, ``uint8 (96, 96, 2)``; labels the 5 categories. Splits:

- ``train`` / ``test``: the standard 24,300 / 24,300 (different toy instances).
- ``azimuth_train``: training images with azimuths 300, 320, 340, 0, 20, 40 degrees;
  ``azimuth_familiar`` / ``azimuth_novel``: test images with those azimuths / with azimuths 60-280.
- ``elevation_train``: training images with the 3 lowest elevations (30, 35, 40 degrees);
  ``elevation_familiar`` / ``elevation_novel``: test images with those / with the 6 higher (45-70).

This is the novel-viewpoint protocol of "Matrix capsules with EM routing" that REM (Renzulli, Tartaglione & Grangetto, §4.1)
and the later capsule papers reuse: train on the familiar viewpoints of the training set, report
accuracy on the familiar and on the novel viewpoints of the test set.
"""

import os

import numpy as np

from keras_capsules.datasets import formats
from keras_capsules.datasets.registry import DatasetInfo, register_dataset, resolve_arrays
from keras_capsules.datasets.tfds_source import tfds_arrays

#: Familiar azimuths and elevations (degrees) of the novel-viewpoint protocol.
FAMILIAR_AZIMUTHS = (300, 320, 340, 0, 20, 40)
FAMILIAR_ELEVATIONS = (30, 35, 40)
SPLITS = (
    "train",
    "test",
    "azimuth_train",
    "azimuth_familiar",
    "azimuth_novel",
    "elevation_train",
    "elevation_familiar",
    "elevation_novel",
)

FILE_STEMS = {
    "train": "smallnorb-5x46789x9x18x6x2x96x96-training",
    "test": "smallnorb-5x01235x9x18x6x2x96x96-testing",
}


def base_split(split):
    """The standard split a viewpoint split is drawn from."""
    return "train" if split == "train" or split.endswith("_train") else "test"


def viewpoint_mask(split, azimuth, elevation):
    """Boolean mask of the examples of ``split`` given their azimuths and elevations in degrees."""
    if split in ("train", "test"):
        return np.ones(len(azimuth), bool)
    axis, part = split.split("_")
    values, familiar = (azimuth, FAMILIAR_AZIMUTHS) if axis == "azimuth" else (elevation, FAMILIAR_ELEVATIONS)
    inside = np.isin(values, familiar)
    return ~inside if part == "novel" else inside


def read_norb_folder(folder, split):
    """``(images, labels, azimuth_deg, elevation_deg)`` from the NYU NORB files in ``folder``, or ``None``."""
    paths = {}
    for kind in ("dat", "cat", "info"):
        stem = f"{FILE_STEMS[split]}-{kind}.mat"
        path = next(
            (p for p in (os.path.join(folder, stem), os.path.join(folder, stem + ".gz")) if os.path.isfile(p)), None
        )
        if path is None:
            return None
        paths[kind] = path
    dat, cat, info = (formats.read_norb_matrix(formats.read_bytes(paths[k]), paths[k]) for k in ("dat", "cat", "info"))
    count = dat.shape[0]
    if dat.shape[1:] != (2, 96, 96) or cat.reshape(-1).shape != (count,) or info.shape != (count, 4):
        raise formats.DataFormatError(
            f"datasets.load: the smallNORB files in {folder!r} disagree: dat {dat.shape}, cat {cat.shape}, info {info.shape}; "
            f"expected (N, 2, 96, 96), (N,), (N, 4)."
        )
    # info columns: instance, elevation index (0-8), azimuth (0, 2, ..., 34; x10 degrees), lighting.
    return (
        dat.transpose(0, 2, 3, 1),
        cat.reshape(-1).astype("int32"),
        info[:, 2].astype("int32") * 10,
        30 + 5 * info[:, 1].astype("int32"),
    )


def read_norb_tfds(split, download):
    keys = ("image", "image2", "label_category", "label_azimuth", "label_elevation")
    data = tfds_arrays("smallnorb", split, keys, download)
    images = np.concatenate([data["image"], data["image2"]], axis=-1).astype("uint8")
    # TFDS stores azimuth / 2 (0..17, x20 degrees) and the elevation index (0..8).
    azimuth = data["label_azimuth"].astype("int32") * 20
    elevation = 30 + 5 * data["label_elevation"].astype("int32")
    return images, data["label_category"].astype("int32"), azimuth, elevation


def load_viewpoints(split="train", data_dir=None, download=False):
    """``(images uint8 (N, 96, 96, 2), labels int32, azimuth_deg int32, elevation_deg int32)`` of ``split``."""
    images, labels, azimuth, elevation = resolve_arrays(_RAW, base_split(split), data_dir, download)
    keep = viewpoint_mask(split, azimuth, elevation)
    return images[keep], labels[keep], azimuth[keep], elevation[keep]


def _arrays(split, data_dir, download):
    images, labels, _, _ = load_viewpoints(split, data_dir, download)
    return images, labels


_FILES = (
    "the NYU files smallnorb-5x46789x9x18x6x2x96x96-training-{dat,cat,info}.mat and "
    "smallnorb-5x01235x9x18x6x2x96x96-testing-{dat,cat,info}.mat (optionally .gz)"
)
_FOLDERS = ("smallnorb", "smallNORB", "norb", "")
_RAW = DatasetInfo(
    "smallnorb",
    (96, 96, 2),
    5,
    ("train", "test"),
    files=_FILES,
    folders=_FOLDERS,
    tfds_name="smallnorb",
    read_folder=read_norb_folder,
    read_tfds=read_norb_tfds,
)
register_dataset(
    DatasetInfo(
        "smallnorb",
        (96, 96, 2),
        5,
        SPLITS,
        files=_FILES,
        folders=_FOLDERS,
        tfds_name="smallnorb",
        arrays=_arrays,
        description="smallNORB stereo pairs, 5 categories; standard and novel-viewpoint (azimuth / elevation) splits",
    )
)
