"""``datasets.load`` on the embedded sample, the real files in $KERAS_CAPSULES_DATA, TFDS mock data, and offline errors."""

import gzip
import os
import shutil
import time

import numpy as np
import pytest
import tensorflow_datasets as tfds

from keras_capsules import datasets

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("KERAS_CAPSULES_DATA") or os.path.join(ROOT, "..", "shared", "data")
HAVE_SHARED = os.path.isfile(os.path.join(SHARED, "mnist", "train-images-idx3-ubyte.gz"))
needs_shared = pytest.mark.skipif(
    not HAVE_SHARED, reason=f"real MNIST files absent from {SHARED} (set KERAS_CAPSULES_DATA)"
)


SAMPLE_DIR = os.path.join(ROOT, "keras_capsules", "datasets", "sample")


def _idx(array):
    """IDX bytes of a uint8 array, written from the format's definition (magic 0x0000080<ndim>, sizes, data)."""
    array = np.asarray(array, np.uint8)
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(n.to_bytes(4, "big") for n in array.shape)
    return header + array.tobytes()


def _write_test_split(folder, images, labels):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(_idx(images)))
    (folder / "t10k-labels-idx1-ubyte").write_bytes(_idx(labels))
    return folder


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


def test_mnist_files_are_never_served_as_fashion_mnist(offline):
    folder = offline / "data"
    folder.mkdir()
    # The embedded sample's files are the official MNIST test files; one is stored decompressed here:
    # identity goes by contents, whatever the compression.
    shutil.copy(os.path.join(SAMPLE_DIR, "t10k-images-idx3-ubyte.gz"), folder)
    with gzip.open(os.path.join(SAMPLE_DIR, "t10k-labels-idx1-ubyte.gz")) as handle:
        (folder / "t10k-labels-idx1-ubyte").write_bytes(handle.read())
    with pytest.raises(
        datasets.DataFormatError,
        match=r"t10k-images-idx3-ubyte\.gz' is mnist's t10k-images-idx3-ubyte file, not fashion_mnist's",
    ):
        datasets.load_arrays("fashion_mnist", "test", data_dir=folder)
    with pytest.raises(datasets.DataFormatError, match=r"is mnist's .* not fashion_mnist's"):
        datasets.load("multi_mnist", "test", base="fashion_mnist", data_dir=folder)
    x, y = datasets.load_arrays("mnist", "test", data_dir=folder)
    sample_train, sample_test = (
        datasets.load_arrays("mnist_sample", "train"),
        datasets.load_arrays("mnist_sample", "test"),
    )
    np.testing.assert_array_equal(x, np.concatenate([sample_train[0], sample_test[0]]))
    np.testing.assert_array_equal(y, np.concatenate([sample_train[1], sample_test[1]]))


@needs_shared
def test_real_files_refuse_the_other_name():
    with pytest.raises(datasets.DataFormatError, match=r"is mnist's t10k-images-idx3-ubyte file, not fashion_mnist's"):
        datasets.load_arrays("fashion_mnist", "test", data_dir=os.path.join(SHARED, "mnist"))
    with pytest.raises(datasets.DataFormatError, match=r"is fashion_mnist's train-images-idx3-ubyte file, not mnist's"):
        datasets.load_arrays("mnist", "train", data_dir=os.path.join(SHARED, "fashion-mnist"))


def test_unknown_idx_files_need_verify_false(offline):
    rng = np.random.default_rng(0)
    images, labels = rng.integers(0, 256, (5, 28, 28)), np.array([3, 0, 9, 9, 1])
    folder = _write_test_split(offline / "mine", images, labels)
    with pytest.raises(datasets.DataFormatError, match=r"t10k-images.*is not mnist's official .* pass verify=False"):
        datasets.load_arrays("mnist", "test", data_dir=folder)
    x, y = datasets.load_arrays("mnist", "test", data_dir=folder, verify=False)
    np.testing.assert_array_equal(x[..., 0], images)
    assert y.tolist() == [3, 0, 9, 9, 1] and y.dtype == np.int32
    batch = next(iter(datasets.load("expanded_mnist", "test", batch_size=5, data_dir=folder, verify=False)))
    assert tuple(batch[0].shape) == (5, 40, 40, 1)


def test_images_of_another_shape_are_refused_even_with_verify_false(offline):
    folder = _write_test_split(offline / "cifar_sized", np.zeros((2, 32, 32)), [1, 2])
    for verify in (True, False):
        with pytest.raises(
            datasets.DataFormatError,
            match=r"t10k-images-idx3-ubyte\.gz' holds 32x32 images \(shape \(2, 32, 32\)\); 'mnist' images are 28x28, expected shape \(N, 28, 28\)",
        ):
            datasets.load_arrays("mnist", "test", data_dir=folder, verify=verify)
    with pytest.raises(datasets.DataFormatError, match=r"holds 32x32 images"):
        datasets.load("fashion_mnist", "test", data_dir=folder, verify=False)


def test_fractional_labels_are_refused_in_files_and_arrays(offline):
    folder = _write_test_split(offline / "float_labels", np.zeros((3, 28, 28)), [1, 2, 3])
    # IDX float64 labels (type code 0x0E, big-endian): 1.0, 2.7, 3.0.
    (folder / "t10k-labels-idx1-ubyte").write_bytes(
        bytes([0, 0, 0x0E, 1]) + (3).to_bytes(4, "big") + np.array([1.0, 2.7, 3.0], ">f8").tobytes()
    )
    with pytest.raises(
        datasets.DataFormatError,
        match=r"datasets\.load: .*t10k-labels-idx1-ubyte' holds labels that are not whole numbers \(1 of 3, first 2\.7 at index 1\)",
    ):
        datasets.load_arrays("mnist", "test", data_dir=folder, verify=False)
    images = np.zeros((3, 28, 28, 1), np.uint8)
    with pytest.raises(
        ValueError,
        match=r"datasets\.from_arrays: argument `labels` expected class indices that are whole numbers .*such as 2\.7",
    ):
        datasets.from_arrays(images, np.array([1.0, 2.7, 3.0]))
    with pytest.raises(ValueError, match=r"such as 0\.5"):
        datasets.from_arrays(images, np.array([[0.5], [1.0], [2.0]], "float32"))
    labels = [y for _, y in datasets.from_arrays(images, np.array([1.0, 2.0, 3.0]), batch_size=3).as_numpy_iterator()]
    assert labels[0].tolist() == [1.0, 2.0, 3.0]  # whole floats are served as given
    multi_hot = np.array([[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]], "float32")  # (N, classes) targets are not class indices
    assert len(list(datasets.from_arrays(images, multi_hot, batch_size=3))) == 1


def test_idx_label_file_with_a_label_past_the_classes_is_refused_by_name(offline):
    # Byte 12 in the label file of a 10-class set (MNIST: digits 0..9); the reader must not serve it.
    folder = _write_test_split(offline / "label_12", np.zeros((4, 28, 28)), [0, 12, 9, 12])
    message = (
        r"datasets\.load: argument `data_dir` expected label files with class indices in 0\.\.9 \(the 10 classes of 'mnist'\), "
        r"received '.*label_12/t10k-labels-idx1-ubyte' holding labels outside them: 2 of 4 label\(s\), values 12\."
    )
    for call in (datasets.load_arrays, datasets.load):
        with pytest.raises(datasets.DataFormatError, match=message):
            call("mnist", "test", data_dir=folder, verify=False)
    folder = _write_test_split(offline / "label_9", np.zeros((4, 28, 28)), [0, 9, 9, 3])
    assert datasets.load_arrays("mnist", "test", data_dir=folder, verify=False)[1].tolist() == [0, 9, 9, 3]


def test_from_arrays_refuses_labels_outside_the_classes(offline):
    images = np.zeros((8, 28, 28, 1), np.uint8)
    high, negative = np.arange(10, 18), np.array([0, 1, -1, 3, 4, 5, 6, 7])
    expected = (
        r"datasets\.from_arrays: argument `labels` expected class indices in 0\.\.9 \(10 classes\), received '{}'"
    )
    with pytest.raises(ValueError, match=expected.format(r"8 of 8 label\(s\), values 10, 11, 12, 13, 14, \.\.\.")):
        datasets.from_arrays(images, high, classes=10)
    with pytest.raises(ValueError, match=expected.format(r"2 of 8 label\(s\), values 10\.0, 17\.0")):
        datasets.from_arrays(images, np.array([[0.0], [10.0], [1], [2], [3], [17.0], [4], [5]]), classes=10)
    for classes in (None, 10):
        with pytest.raises(
            ValueError,
            match=r"expected class indices (>= 0|in 0\.\.9 \(10 classes\)), received '1 of 8 label\(s\), values -1'",
        ):
            datasets.from_arrays(images, negative, classes=classes)
    # Without classes the upper end is unknown: 10..17 pass; with classes, 9 is the last class.
    assert [y.tolist() for _, y in datasets.from_arrays(images, high, batch_size=8).as_numpy_iterator()] == [
        list(range(10, 18))
    ]
    nines = np.full(8, 9)
    assert [
        y.tolist() for _, y in datasets.from_arrays(images, nines, batch_size=8, classes=10).as_numpy_iterator()
    ] == [[9] * 8]
    multi_hot = np.tile(np.array([[0.0, 1.0, 1.0]], "float32"), (8, 1))  # (N, classes) targets are not class indices
    assert len(list(datasets.from_arrays(images, multi_hot, batch_size=8, classes=3))) == 1
    for bad in (0, 2.5, True):
        with pytest.raises(
            (TypeError, ValueError), match=r"datasets\.from_arrays: argument `classes` expected an integer >= 1"
        ):
            datasets.from_arrays(images, nines, classes=bad)


def test_numpy_integer_batch_size_and_limit(offline):
    batch = next(iter(datasets.load("mnist_sample", "test", batch_size=np.int64(4), limit=np.uint8(6))))
    assert tuple(batch[0].shape) == (4, 28, 28, 1)
    assert [
        len(y)
        for _, y in datasets.load("mnist_sample", "test", batch_size=np.int32(4), limit=np.int64(6)).as_numpy_iterator()
    ] == [4, 2]
    assert len(list(datasets.from_arrays(np.zeros((5, 2, 2, 1), np.uint8), np.arange(5), batch_size=np.int64(2)))) == 3
    for bad in (True, 2.0):
        with pytest.raises(ValueError, match=r"datasets\.load: argument `batch_size` expected a positive integer"):
            datasets.load("mnist_sample", batch_size=bad)


def test_bad_labels_empty_files_and_bad_data_dir(offline):
    folder = _write_test_split(offline / "bad", np.zeros((3, 28, 28)), [1, 13, 2])
    for verify in (True, False):
        with pytest.raises(
            datasets.DataFormatError,
            match=r"t10k-labels-idx1-ubyte' holding labels outside them: 1 of 3 label\(s\), values 13\.",
        ):
            datasets.load_arrays("fashion_mnist", "test", data_dir=folder, verify=verify)
    folder = _write_test_split(offline / "empty", np.zeros((0, 28, 28)), np.zeros((0,)))
    with pytest.raises(
        datasets.DataFormatError, match=r"t10k-images-idx3-ubyte\.gz' and .*t10k-labels-idx1-ubyte' hold no examples"
    ):
        datasets.load_arrays("mnist", "test", data_dir=folder, verify=False)
    for call in (datasets.load, datasets.load_arrays):
        for name in ("mnist", "mnist_sample"):
            with pytest.raises(
                TypeError, match=r"datasets\.load: argument `data_dir` expected None or a folder path .*received 123"
            ):
                call(name, "test", data_dir=123)


def test_shuffle_is_deterministic_per_seed():
    def first(seed):
        return next(iter(datasets.load("mnist_sample", "train", batch_size=16, seed=seed)))[1].numpy()

    np.testing.assert_array_equal(first(3), first(3))
    assert not np.array_equal(first(3), first(4))
    dataset = datasets.load("mnist_sample", "train", batch_size=16, seed=3)
    epochs = [next(iter(dataset))[1].numpy() for _ in range(2)]
    assert not np.array_equal(*epochs)  # reshuffled every epoch


@pytest.mark.parametrize(
    "name", ["mnist", "cifar10", "cifar100", "svhn", "smallnorb", "fashion_mnist", "affnist", "multi_mnist"]
)
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
        for name, shape, classes in (
            ("cifar10", (32, 32, 3), 10),
            ("cifar100", (32, 32, 3), 100),
            ("svhn", (32, 32, 3), 10),
        ):
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


def test_from_arrays_serves_arrays_as_load_does_with_the_evaluation_transform():
    images = np.random.default_rng(0).integers(0, 256, size=(5, 32, 32, 3), dtype=np.uint8)
    labels = np.arange(5, dtype=np.int32)
    plain = list(datasets.from_arrays(images, labels, batch_size=2).as_numpy_iterator())
    assert [len(y) for _, y in plain] == [2, 2, 1]
    np.testing.assert_array_equal(np.concatenate([x for x, _ in plain]), images.astype("float32") / np.float32(255.0))
    # cifar24's evaluation transform: the central 24 x 24 crop of the 32 x 32 image, by hand.
    cropped = list(datasets.from_arrays(images, labels, batch_size=4, augment="cifar24").as_numpy_iterator())
    np.testing.assert_array_equal(
        np.concatenate([x for x, _ in cropped]), images[:, 4:28, 4:28].astype("float32") / np.float32(255.0)
    )
    np.testing.assert_array_equal(np.concatenate([y for _, y in cropped]), labels)
    with pytest.raises(
        ValueError, match=r"datasets.from_arrays: argument `batch_size` expected a positive integer, received 0"
    ):
        datasets.from_arrays(images, labels, batch_size=0)
