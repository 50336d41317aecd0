"""``datasets.load`` on the embedded sample, the real files in ../shared/data, TFDS mock data, and offline errors."""

import os
import time

import numpy as np
import pytest
import tensorflow_datasets as tfds

from keras_capsules import datasets

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("KERAS_CAPSULES_DATA") or os.path.join(ROOT, "..", "shared", "data")
HAVE_SHARED = os.path.isfile(os.path.join(SHARED, "mnist", "train-images-idx3-ubyte.gz"))
needs_shared = pytest.mark.skipif(not HAVE_SHARED, reason=f"real MNIST files absent from {SHARED} (set KERAS_CAPSULES_DATA)")


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No $KERAS_CAPSULES_DATA and an empty TFDS data dir."""
    monkeypatch.delenv("KERAS_CAPSULES_DATA", raising=False)
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))
    return tmp_path


def test_mnist_sample_keeps_its_behaviour():
    x, y = datasets.load_arrays("mnist_sample", "train")
    assert x.shape == (8000, 28, 28, 1) and x.dtype == np.uint8 and y.dtype == np.int32
    batch_x, batch_y = next(iter(datasets.load("mnist_sample", "test", batch_size=7, shuffle=False)))
    assert batch_x.shape == (7, 28, 28, 1) and batch_x.dtype.name == "float32"
    test_x, test_y = datasets.load_arrays("mnist_sample", "test")
    np.testing.assert_allclose(batch_x.numpy(), test_x[:7] / 255.0)
    np.testing.assert_array_equal(batch_y.numpy(), test_y[:7])
    assert sum(int(b.shape[0]) for b, _ in datasets.load("mnist_sample", "test", batch_size=300)) == 2000


@needs_shared
def test_real_mnist_and_fashion_mnist_files():
    for name in ("mnist", "fashion_mnist"):
        x, y = datasets.load_arrays(name, "test", data_dir=SHARED)
        assert x.shape == (10000, 28, 28, 1) and sorted(set(y.tolist())) == list(range(10))
    sample_x, _ = datasets.load_arrays("mnist_sample", "test")
    test_x, _ = datasets.load_arrays("mnist", "test", data_dir=SHARED)
    np.testing.assert_array_equal(sample_x, test_x[8000:])  # the sample is the MNIST test set
    batches = list(datasets.load("mnist", "train", batch_size=64, data_dir=SHARED, limit=200, drop_remainder=True))
    assert [int(b.shape[0]) for b, _ in batches] == [64, 64, 64]


def test_shuffle_is_deterministic_per_seed():
    def first(seed):
        return next(iter(datasets.load("mnist_sample", "train", batch_size=16, seed=seed)))[1].numpy()

    np.testing.assert_array_equal(first(3), first(3))
    assert not np.array_equal(first(3), first(4))
    dataset = datasets.load("mnist_sample", "train", batch_size=16, seed=3)
    epochs = [next(iter(dataset))[1].numpy() for _ in range(2)]
    assert not np.array_equal(*epochs)  # reshuffled every epoch


@pytest.mark.parametrize("name", ["mnist", "cifar10", "cifar100", "svhn", "smallnorb", "fashion_mnist", "affnist", "multi_mnist"])
def test_missing_dataset_fails_fast_naming_files_and_folders(offline, name):
    start = time.time()
    with pytest.raises(FileNotFoundError) as error:
        datasets.load(name, "test", data_dir=offline / "nothing")
    assert time.time() - start < 15
    message = str(error.value)
    assert "was not found and download=False" in message and str(offline / "nothing") in message
    info = datasets.info("mnist" if name == "multi_mnist" else name)
    assert info.files.split()[1] in message
    if info.tfds_name:
        assert f"tfds build {info.tfds_name}" in message


def test_tfds_fallback_with_mock_data(offline):
    with tfds.testing.mock_data(num_examples=12):
        for name, shape, classes in (("cifar10", (32, 32, 3), 10), ("cifar100", (32, 32, 3), 100), ("svhn", (32, 32, 3), 10)):
            x, y = datasets.load_arrays(name, "train")
            assert x.shape == (12,) + shape and x.dtype == np.uint8
            assert y.dtype == np.int32 and 0 <= y.min() and y.max() < classes
            batch_x, _ = next(iter(datasets.load(name, "test", batch_size=5, augment="cifar_crop_flip")))
            assert tuple(batch_x.shape) == (5, 32, 32, 3)


def test_argument_errors():
    with pytest.raises(ValueError, match=r"datasets\.load.*`name`.*'nope'"):
        datasets.load("nope")
    with pytest.raises(ValueError, match=r"datasets\.load.*`split`.*'mnist_sample'.*'validation'"):
        datasets.load("mnist_sample", "validation")
    with pytest.raises(ValueError, match=r"datasets\.load.*`batch_size`.*0"):
        datasets.load("mnist_sample", batch_size=0)
    with pytest.raises(ValueError, match=r"unknown options \['shift'\]"):
        datasets.load("mnist_sample", shift=3)
    with pytest.raises(ValueError, match=r"get_augmentation.*`name`.*'nope'"):
        datasets.load("mnist_sample", augment="nope")


def test_info_describes_every_dataset():
    for name in datasets.available():
        info = datasets.info(name)
        assert len(info.image_shape) == 3 and info.classes >= 2 and info.splits and info.description
    assert datasets.info("multi_mnist").multi_label and not datasets.info("mnist").multi_label
    assert datasets.num_classes("cifar100") == 100 and datasets.num_classes("smallnorb") == 5
