"""smallNORB: the novel-viewpoint splits checked by azimuth/elevation values, TFDS mock data and the NYU files."""

import numpy as np
import pytest
import tensorflow_datasets as tfds

from keras_capsules import datasets
from keras_capsules.datasets import smallnorb

# Hinton et al. 2018: train on azimuths (300, 320, 340, 0, 20, 40), test on 60..280; elevations 30-40 vs 45-70.
FAMILIAR_AZIMUTHS = {300, 320, 340, 0, 20, 40}
NOVEL_AZIMUTHS = set(range(60, 281, 20))
FAMILIAR_ELEVATIONS = {30, 35, 40}
NOVEL_ELEVATIONS = {45, 50, 55, 60, 65, 70}


@pytest.fixture
def offline(monkeypatch, tmp_path):
    monkeypatch.delenv("KERAS_CAPSULES_DATA", raising=False)
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))
    return tmp_path


def test_protocol_constants_cover_all_viewpoints():
    assert FAMILIAR_AZIMUTHS | NOVEL_AZIMUTHS == set(range(0, 341, 20)) and len(NOVEL_AZIMUTHS) == 12
    assert (
        set(smallnorb.FAMILIAR_AZIMUTHS) == FAMILIAR_AZIMUTHS
        and set(smallnorb.FAMILIAR_ELEVATIONS) == FAMILIAR_ELEVATIONS
    )


def test_viewpoint_splits_with_tfds_mock_data(offline):
    with tfds.testing.mock_data(num_examples=90):
        raw = tfds.as_numpy(tfds.load("smallnorb", split="test", batch_size=90))
        raw = next(iter(raw))
        azimuth_degrees = raw["label_azimuth"] * 20  # TFDS stores azimuth / 20 degrees (0..17)
        elevation_degrees = 30 + 5 * raw["label_elevation"]
        stereo = np.concatenate([raw["image"], raw["image2"]], -1)

        x, y, azimuth, elevation = smallnorb.load_viewpoints("test")
        np.testing.assert_array_equal(x, stereo)
        np.testing.assert_array_equal(y, raw["label_category"])
        np.testing.assert_array_equal(azimuth, azimuth_degrees)
        for split, values, allowed in (
            ("azimuth_familiar", azimuth_degrees, FAMILIAR_AZIMUTHS),
            ("azimuth_novel", azimuth_degrees, NOVEL_AZIMUTHS),
            ("elevation_familiar", elevation_degrees, FAMILIAR_ELEVATIONS),
            ("elevation_novel", elevation_degrees, NOVEL_ELEVATIONS),
        ):
            keep = np.array([v in allowed for v in values])
            assert 0 < keep.sum() < len(keep)
            images, labels = datasets.load_arrays("smallnorb", split)
            np.testing.assert_array_equal(images, stereo[keep])
            np.testing.assert_array_equal(labels, raw["label_category"][keep])
        _, _, train_azimuth, _ = smallnorb.load_viewpoints("azimuth_train")
        assert set(train_azimuth.tolist()) <= FAMILIAR_AZIMUTHS
        _, _, _, train_elevation = smallnorb.load_viewpoints("elevation_train")
        assert set(train_elevation.tolist()) <= FAMILIAR_ELEVATIONS

        em = next(iter(datasets.load("smallnorb", "azimuth_train", batch_size=8, augment="smallnorb_em")))[0].numpy()
        assert em.shape == (8, 32, 32, 1)
        eff = next(iter(datasets.load("smallnorb", "azimuth_novel", batch_size=8, augment="smallnorb_effcapsnet")))[
            0
        ].numpy()
        assert eff.shape == (8, 48, 48, 2)
        # Evaluation: per-image standardisation then a centre crop (mean ~0 before cropping).
        assert abs(float(eff.mean())) < 0.5


def _norb_file(path, magic, data, dims):
    header = magic.to_bytes(4, "little") + len(data.shape).to_bytes(4, "little")
    header += b"".join(int(n).to_bytes(4, "little") for n in dims)
    path.write_bytes(header + data.tobytes())


def test_nyu_norb_files(offline):
    folder = offline / "norb"
    folder.mkdir()
    rng = np.random.default_rng(0)
    dat = rng.integers(0, 256, (4, 2, 96, 96), dtype=np.uint8)
    cat = np.array([0, 4, 2, 1], "<i4")
    # info columns: instance, elevation index, azimuth (0, 2, ..., 34 = x10 degrees), lighting
    info = np.array([[4, 0, 30, 1], [6, 2, 6, 0], [7, 3, 0, 5], [8, 8, 34, 2]], "<i4")
    stem = smallnorb.FILE_STEMS["train"]
    _norb_file(folder / f"{stem}-dat.mat", 0x1E3D4C55, dat, dat.shape)
    _norb_file(folder / f"{stem}-cat.mat", 0x1E3D4C54, cat, (4, 1, 1))
    _norb_file(folder / f"{stem}-info.mat", 0x1E3D4C54, info, (4, 4, 1))
    x, y, azimuth, elevation = smallnorb.load_viewpoints("train", data_dir=offline)
    np.testing.assert_array_equal(x, dat.transpose(0, 2, 3, 1))
    assert (
        y.tolist() == [0, 4, 2, 1] and azimuth.tolist() == [300, 60, 0, 340] and elevation.tolist() == [30, 40, 45, 70]
    )
    _, y_azimuth = datasets.load_arrays("smallnorb", "azimuth_train", data_dir=offline)
    _, y_elevation = datasets.load_arrays("smallnorb", "elevation_train", data_dir=offline)
    assert y_azimuth.tolist() == [0, 2, 1] and y_elevation.tolist() == [0, 4]
    with pytest.raises(FileNotFoundError, match=r"smallnorb-5x01235x9x18x6x2x96x96-testing"):
        datasets.load_arrays("smallnorb", "azimuth_novel", data_dir=offline)
