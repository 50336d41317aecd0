"""Readers of the published file formats, on small files written here byte by byte, and their errors."""

import gzip
import io
import os
import pickle
import tarfile
import zipfile

import numpy as np
import pytest

from keras_capsules import datasets
from keras_capsules.datasets import formats


@pytest.fixture(autouse=True)
def _no_env_data(monkeypatch, tmp_path):
    monkeypatch.delenv("KERAS_CAPSULES_DATA", raising=False)
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "no-tfds"))


def _cifar_records(labels, label_bytes=1):
    """Records whose pixel (r, c, ch) is (r + 2 c + 50 ch + label) % 256."""
    records, images = [], []
    r, c = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    for label in labels:
        image = np.stack([(r + 2 * c + 50 * ch + label) % 256 for ch in range(3)], -1).astype(np.uint8)
        planes = image.transpose(2, 0, 1).reshape(-1)  # R plane, G plane, B plane, each row-major
        head = bytes([label // 10, label]) if label_bytes == 2 else bytes([label])
        records.append(head + planes.tobytes())
        images.append(image)
    return b"".join(records), np.stack(images)


def test_cifar10_binary_batches_and_archive(tmp_path):
    folder = tmp_path / "cifar10" / "cifar-10-batches-bin"
    folder.mkdir(parents=True)
    expected = []
    for i in range(1, 6):
        raw, images = _cifar_records([i, i + 1])
        (folder / f"data_batch_{i}.bin").write_bytes(raw)
        expected.append(images)
    raw, test_images = _cifar_records([7])
    (folder / "test_batch.bin").write_bytes(raw)
    images, labels = datasets.load_arrays("cifar10", "train", data_dir=tmp_path)
    assert images.shape == (10, 32, 32, 3) and images.dtype == np.uint8
    np.testing.assert_array_equal(images, np.concatenate(expected))
    np.testing.assert_array_equal(labels, [1, 2, 2, 3, 3, 4, 4, 5, 5, 6])
    # Pixel (row 3, col 5) of the test image: R = 3 + 10 + 7, G = R + 50, B = R + 100.
    test_x, test_y = datasets.load_arrays("cifar10", "test", data_dir=tmp_path)
    assert tuple(test_x[0, 3, 5]) == (20, 70, 120) and test_y.tolist() == [7]

    archive_dir = tmp_path / "archive"
    archive_dir.mkdir()
    with tarfile.open(archive_dir / "cifar-10-binary.tar.gz", "w:gz") as tar:
        tar.add(folder, arcname="cifar-10-batches-bin")
    again, _ = datasets.load_arrays("cifar10", "train", data_dir=archive_dir)
    np.testing.assert_array_equal(again, images)


def test_cifar100_binary_uses_fine_labels(tmp_path):
    folder = tmp_path / "cifar-100-binary"
    folder.mkdir()
    raw, images = _cifar_records([42, 99], label_bytes=2)
    (folder / "train.bin").write_bytes(raw)
    x, y = datasets.load_arrays("cifar100", "train", data_dir=tmp_path)
    np.testing.assert_array_equal(x, images)
    assert y.tolist() == [42, 99]


def test_cifar_python_batches_and_refused_pickles(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    _, images = _cifar_records([4])
    batch = {b"data": images.transpose(0, 3, 1, 2).reshape(1, -1), b"labels": [4]}
    (folder / "test_batch").write_bytes(pickle.dumps(batch, protocol=2))
    x, y = datasets.load_arrays("cifar10", "test", data_dir=tmp_path)
    np.testing.assert_array_equal(x, images)
    assert y.tolist() == [4]

    class Evil:
        def __reduce__(self):
            return (os.system, ("true",))

    (folder / "test_batch").write_bytes(pickle.dumps({b"data": Evil(), b"labels": [0]}))
    with pytest.raises(formats.DataFormatError, match=r"test_batch.*not a CIFAR python batch.*os.*not allowed"):
        datasets.load_arrays("cifar10", "test", data_dir=tmp_path)


def test_truncated_cifar_and_idx_files_name_the_file(tmp_path):
    folder = tmp_path / "cifar-100-binary"
    folder.mkdir()
    raw, _ = _cifar_records([1, 2], label_bytes=2)
    (folder / "test.bin").write_bytes(raw[:-100])
    with pytest.raises(formats.DataFormatError, match=r"test\.bin.*truncated or corrupt"):
        datasets.load_arrays("cifar100", "test", data_dir=tmp_path)

    mnist = tmp_path / "mnist"
    mnist.mkdir()
    header = (0x00000803).to_bytes(4, "big") + b"".join(n.to_bytes(4, "big") for n in (3, 28, 28))
    (mnist / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(header + bytes(2 * 784)))
    (mnist / "t10k-labels-idx1-ubyte").write_bytes((0x00000801).to_bytes(4, "big") + (3).to_bytes(4, "big") + bytes(3))
    with pytest.raises(datasets.IdxFormatError, match=r"t10k-images.*truncated or corrupt.*\(3, 28, 28\)"):
        datasets.load_arrays("mnist", "test", data_dir=tmp_path)
    (mnist / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(header + bytes(3 * 784))[:-8])
    with pytest.raises(datasets.IdxFormatError, match=r"t10k-images.*not a readable gzip"):
        datasets.load_arrays("mnist", "test", data_dir=tmp_path)


def test_svhn_mat_maps_label_10_to_digit_0(tmp_path):
    from scipy import io as scipy_io

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (4, 32, 32, 3), dtype=np.uint8)
    scipy_io.savemat(
        tmp_path / "test_32x32.mat", {"X": images.transpose(1, 2, 3, 0), "y": np.array([[10], [1], [9], [10]])}
    )
    x, y = datasets.load_arrays("svhn", "test", data_dir=tmp_path)
    np.testing.assert_array_equal(x, images)
    assert y.tolist() == [0, 1, 9, 0]
    (tmp_path / "train_32x32.mat").write_bytes(b"MATLAB 5.0 MAT-file, garbage")
    with pytest.raises(formats.DataFormatError, match=r"train_32x32\.mat"):
        datasets.load_arrays("svhn", "train", data_dir=tmp_path)


def test_mat_labels_must_be_whole_numbers(tmp_path):
    from scipy import io as scipy_io

    images = np.zeros((2, 32, 32, 3), np.uint8)
    scipy_io.savemat(tmp_path / "test_32x32.mat", {"X": images.transpose(1, 2, 3, 0), "y": np.array([[10.0], [2.5]])})
    with pytest.raises(
        formats.DataFormatError,
        match=r"read_svhn_mat: .*test_32x32\.mat' holds labels that are not whole numbers \(1 of 2, first 2\.5 at index 1\)",
    ):
        datasets.load_arrays("svhn", "test", data_dir=tmp_path)
    scipy_io.savemat(
        tmp_path / "test_32x32.mat", {"X": images.transpose(1, 2, 3, 0), "y": np.array([[10.0], [2.0]])}
    )  # MATLAB doubles
    assert datasets.load_arrays("svhn", "test", data_dir=tmp_path)[1].tolist() == [0, 2]
    folder = tmp_path / "affnist"
    folder.mkdir()
    _affnist_mat(folder / "test.mat", np.zeros((2, 40, 40), np.uint8), np.array([3.0, 7.25]))
    with pytest.raises(
        formats.DataFormatError,
        match=r"read_affnist_mat: .*test\.mat' holds labels that are not whole numbers .*first 7\.25",
    ):
        datasets.load_arrays("affnist", "test", data_dir=tmp_path)


def _affnist_mat(path, images, labels):
    from scipy import io as scipy_io

    scipy_io.savemat(
        path, {"affNISTdata": {"image": images.reshape(len(images), 1600).T, "label_int": labels[None, :]}}
    )


def test_affnist_single_file_batches_and_zip(tmp_path):
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (6, 40, 40), dtype=np.uint8)
    labels = np.array([3, 1, 4, 1, 5, 9])
    folder = tmp_path / "affnist"
    folder.mkdir()
    _affnist_mat(folder / "test.mat", images, labels)
    x, y = datasets.load_arrays("affnist", "test", data_dir=tmp_path)
    assert x.shape == (6, 40, 40, 1)
    np.testing.assert_array_equal(x[..., 0], images)  # each 1600-vector is a row-major 40x40 image
    np.testing.assert_array_equal(y, labels)

    batches = tmp_path / "batched" / "training_batches"
    batches.mkdir(parents=True)
    for number, part in ((2, slice(3, 6)), (1, slice(0, 3)), (10, slice(0, 1))):
        _affnist_mat(batches / f"{number}.mat", images[part], labels[part])
    x, y = datasets.load_arrays("affnist", "train", data_dir=tmp_path / "batched")
    np.testing.assert_array_equal(y, np.concatenate([labels, labels[:1]]))  # 1.mat, 2.mat, 10.mat in numeric order

    zipped = tmp_path / "zipped"
    zipped.mkdir()
    buffer = io.BytesIO()
    _affnist_mat(buffer, images, labels)
    with zipfile.ZipFile(zipped / "validation.mat.zip", "w") as archive:
        archive.writestr("validation.mat", buffer.getvalue())
    x, _ = datasets.load_arrays("affnist", "validation", data_dir=zipped)
    np.testing.assert_array_equal(x[..., 0], images)


def test_affnist_missing_names_the_official_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"(?s)affnist.*test\.mat.*test_batches.*affnist"):
        datasets.load_arrays("affnist", "test", data_dir=tmp_path)


def test_norb_matrix_header_and_truncation():
    data = np.arange(24, dtype="<i4").reshape(2, 3, 4)
    raw = (0x1E3D4C54).to_bytes(4, "little") + (3).to_bytes(4, "little")
    raw += b"".join(n.to_bytes(4, "little") for n in (2, 3, 4)) + data.tobytes()
    np.testing.assert_array_equal(formats.read_norb_matrix(raw, "x"), data)
    # ndim 1 still stores 3 sizes (the smallNORB -cat files).
    cat = (
        (0x1E3D4C54).to_bytes(4, "little")
        + (1).to_bytes(4, "little")
        + b"".join(n.to_bytes(4, "little") for n in (3, 1, 1))
    )
    np.testing.assert_array_equal(formats.read_norb_matrix(cat + np.array([4, 0, 2], "<i4").tobytes(), "c"), [4, 0, 2])
    with pytest.raises(formats.DataFormatError, match=r"'x'.*truncated or corrupt.*\(2, 3, 4\)"):
        formats.read_norb_matrix(raw[:-1], "x")
    with pytest.raises(formats.DataFormatError, match="not a NORB matrix"):
        formats.read_norb_matrix(b"\x00" * 40, "x")
