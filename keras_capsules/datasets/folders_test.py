"""A user's folder of images: layout, pixels, inference, conversions, the stratified hold-out and every bad-folder case.

Folders are written here with Pillow (an encoder independent of TensorFlow's decoders); expected
pixels, labels, counts and hold-out sizes are the arrays written and hand-derived numbers.
"""

import importlib
import os

import numpy as np
import pytest
from PIL import Image

from keras_capsules import datasets, recipes
from keras_capsules.datasets import folders, registry
from keras_capsules.datasets import holdout as validation

train_module = importlib.import_module("keras_capsules.training.train")
RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    """Folders read and registered in a test are forgotten after it."""
    monkeypatch.setattr(registry, "_DATASETS", dict(registry._DATASETS))
    monkeypatch.setattr(folders, "_READ", {})


def _save(path, array, **kwargs):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    image = array if isinstance(array, Image.Image) else Image.fromarray(array)
    image.save(path, **kwargs)
    return array


def _random(*shape):
    return RNG.integers(0, 256, size=shape, dtype=np.uint8)


def _constant(value, height=4, width=4, channels=1):
    return (
        np.full((height, width, channels), value, dtype=np.uint8).squeeze(-1)
        if channels == 1
        else np.full((height, width, channels), value, np.uint8)
    )


def _tree(root):
    """Every entry under ``root`` (links not followed) with its kind, size and modification time."""
    found = {}
    for folder, subfolders, files in os.walk(root):
        for name in subfolders + files:
            path = os.path.join(folder, name)
            status = os.lstat(path)
            found[os.path.relpath(path, root)] = (status.st_mode, status.st_size, status.st_mtime_ns)
    return found


def _batches(dataset):
    pairs = list(dataset.as_numpy_iterator())
    return np.concatenate([x for x, _ in pairs]), np.concatenate([y for _, y in pairs])


# ------------------------------------------------------------------------------------- reading


def test_flat_folder_pixels_labels_and_class_order(tmp_path, capsys):
    # sorted() of the names, as Keras: upper case before lower case, accents after ASCII; kept exactly.
    names = ["b", "A", "c d", "é"]
    written = {
        name: [_save(str(tmp_path / name / f"{i}.png"), _random(5, 6, 3)) for i in range(2 + len(name))]
        for name in names
    }
    info = datasets.register_folder(tmp_path)
    assert info.class_names == ("A", "b", "c d", "é") == datasets.class_names(info.name)
    assert (
        info.name == f"folder:{tmp_path}"
        and info.splits == ("train",)
        and info.image_shape == (5, 6, 3)
        and info.classes == 4
    )
    images, labels = datasets.load_arrays(info.name)
    expected = [
        (image, label) for label, name in enumerate(["A", "b", "c d", "é"]) for image in written[name]
    ]  # files by name
    np.testing.assert_array_equal(images, np.stack([image for image, _ in expected]))
    np.testing.assert_array_equal(labels, [label for _, label in expected])
    assert images.dtype == np.uint8 and labels.dtype == np.int32 and not images.flags.writeable
    printed = capsys.readouterr().out
    assert (
        "4 classes ['A', 'b', 'c d', 'é']" in printed
        and "images: train 14" in printed
        and "size 5x6: the most common size (14 of 14" in printed
    )
    # The same folder and settings again: the same info, read and printed once.
    assert datasets.register_folder(str(tmp_path)) is info and capsys.readouterr().out == ""
    batches = list(datasets.load(info.name, batch_size=8, shuffle=False).as_numpy_iterator())
    np.testing.assert_array_equal(np.concatenate([x for x, _ in batches]), images.astype(np.float32) / np.float32(255))


def test_formats_alpha_sixteen_bit_and_channels(tmp_path):
    gray = _save(str(tmp_path / "a" / "gray.png"), _random(4, 4))
    rgba = _save(str(tmp_path / "a" / "rgba.png"), _random(4, 4, 4))
    gray_alpha = _save(str(tmp_path / "a" / "la.png"), Image.fromarray(_random(4, 4, 2), "LA"))
    deep = _save(str(tmp_path / "b" / "deep.png"), (_random(4, 4).astype(np.uint16) * 251 + 3))  # 16-bit gray (I;16)
    bmp = _save(str(tmp_path / "b" / "picture.BMP"), _random(4, 4, 3))  # extensions in any case
    red, blue = _constant((255, 0, 0), channels=3), _constant((0, 0, 255), channels=3)
    Image.fromarray(red).save(str(tmp_path / "b" / "moving.gif"), save_all=True, append_images=[Image.fromarray(blue)])
    smooth = (np.add.outer(np.arange(16), np.arange(16)) * 7).astype(np.uint8)
    jpeg_rgb = _save(
        str(tmp_path / "c" / "rgb.jpg"), np.stack([smooth, smooth[::-1], smooth.T], -1)[:4, :4], quality=98
    )
    jpeg_gray = _save(str(tmp_path / "c" / "gray.jpeg"), smooth[:4, :4], quality=98)

    info = datasets.register_folder(tmp_path)
    images, labels = datasets.load_arrays(info.name)
    assert info.image_shape == (4, 4, 3)  # colour images present: RGB
    np.testing.assert_array_equal(labels, [0, 0, 0, 1, 1, 1, 2, 2])
    # a/ gray.png, la.png, rgba.png; b/ deep.png, moving.gif, picture.BMP; c/ gray.jpeg, rgb.jpg (sorted names).
    np.testing.assert_array_equal(images[0], np.repeat(gray[..., None], 3, -1))
    np.testing.assert_array_equal(images[1], np.repeat(np.asarray(gray_alpha)[..., :1], 3, -1))  # alpha dropped
    np.testing.assert_array_equal(images[2], rgba[..., :3])
    np.testing.assert_array_equal(
        images[3], np.repeat((deep // 256).astype(np.uint8)[..., None], 3, -1)
    )  # the high byte
    np.testing.assert_array_equal(images[4], red)  # the first frame
    np.testing.assert_array_equal(images[5], bmp)
    assert np.abs(images[6].astype(int) - jpeg_gray[..., None]).max() <= 4  # JPEG is lossy
    assert np.abs(images[7].astype(int) - jpeg_rgb).max() <= 12
    record = datasets.folder_summary(info.name)
    # Stored gray: gray.png, la.png, deep.png, gray.jpeg; alpha: la.png, rgba.png; 16-bit: deep.png.
    assert (record["gray_to_rgb"], record["alpha_dropped"], record["sixteen_bit"], record["resized"]) == (4, 2, 1, 0)
    assert record["channels_from"] == "4 of 8 images are colour"

    # channels=1: colour images become their luma, 0.2989 R + 0.5870 G + 0.1140 B, rounded.
    gray_info = datasets.register_folder(tmp_path, channels=1)
    assert gray_info.name == f"folder:{tmp_path}@1ch" and gray_info.image_shape == (4, 4, 1)
    gray_images, _ = datasets.load_arrays(gray_info.name)
    luma = lambda rgb: np.round(rgb.astype(np.float64) @ [0.2989, 0.5870, 0.1140])  # noqa: E731
    assert np.abs(gray_images[2, ..., 0] - luma(rgba[..., :3])).max() <= 1
    assert np.abs(gray_images[5, ..., 0] - luma(bmp)).max() <= 1
    np.testing.assert_array_equal(gray_images[0, ..., 0], gray)
    assert (
        datasets.folder_summary(gray_info.name)["rgb_to_gray"] == 4
        and datasets.folder_summary(gray_info.name)["gray_to_rgb"] == 0
    )


def test_size_and_channels_inferred_and_resized(tmp_path):
    # Three 6x4 images, two 5x5: 6x4 is the most common size; every image gray: 1 channel.
    for i in range(3):
        _save(str(tmp_path / "x" / f"{i}.png"), _constant(10 * i + 5, 6, 4))
    _save(str(tmp_path / "y" / "0.png"), _constant(200, 5, 5))
    _save(str(tmp_path / "y" / "1.png"), _constant(77, 5, 5))
    info = datasets.register_folder(tmp_path)
    assert info.image_shape == (6, 4, 1)
    images, _ = datasets.load_arrays(info.name)
    # A constant image stays constant through a bilinear resize.
    np.testing.assert_array_equal(
        images[..., 0], np.array([5, 15, 25, 200, 77], np.uint8)[:, None, None] * np.ones((6, 4), np.uint8)
    )
    record = datasets.folder_summary(info.name)
    assert record["resized"] == 2 and record["image_size_from"] == "the most common size (3 of 5 images)"
    assert record["channels"] == 1 and record["channels_from"] == "every image is gray"
    # Given: every image resized, gray repeated to RGB; another name.
    given = datasets.register_folder(tmp_path, image_size=(3, 3), channels=3)
    assert given.name == f"folder:{tmp_path}@3x3@3ch" and given.image_shape == (3, 3, 3)
    assert (
        datasets.folder_summary(given.name)["resized"] == 5 and datasets.folder_summary(given.name)["gray_to_rgb"] == 5
    )
    np.testing.assert_array_equal(datasets.load_arrays(given.name)[0][3], np.full((3, 3, 3), 200, np.uint8))


def test_a_size_tie_goes_to_the_larger_area(tmp_path):
    for i in range(2):
        _save(str(tmp_path / "x" / f"{i}.png"), _constant(1, 3, 5))  # area 15
        _save(str(tmp_path / "y" / f"{i}.png"), _constant(1, 4, 4))  # area 16
    assert datasets.register_folder(tmp_path).image_shape == (4, 4, 1)


def test_train_and_test_splits(tmp_path):
    for split, count in (("train", 3), ("test", 2)):
        for name, value in (("cats", 10), ("dogs", 20)):
            for i in range(count):
                _save(str(tmp_path / split / name / f"{i}.png"), _constant(value + i))
    _save(str(tmp_path / "val" / "cats" / "0.png"), _constant(0))
    (tmp_path / "train" / "fish").mkdir()  # no training image: an error, or skipped with its test image
    _save(str(tmp_path / "test" / "fish" / "0.png"), _constant(99))
    with pytest.raises(datasets.DataFormatError, match=r"where 'fish' holds no image file .* drop_empty_classes=True"):
        datasets.register_folder(tmp_path)
    info = datasets.register_folder(tmp_path, drop_empty_classes=True)
    assert info.splits == ("train", "test") and info.class_names == ("cats", "dogs")
    images, labels = datasets.load_arrays(info.name, "test")
    np.testing.assert_array_equal(images[:, 0, 0, 0], [10, 11, 20, 21])
    np.testing.assert_array_equal(labels, [0, 0, 1, 1])
    record = datasets.folder_summary(info.name)
    assert (
        record["images"] == {"train": 6, "test": 4}
        and record["skipped"]["outside_class_folders"] == 1
        and record["skipped_named"]["outside_class_folders"] == ["val"]
    )
    assert record["empty_classes"] == ["fish"] and record["images_of_empty_classes"] == 1
    assert record["images_per_class"] == {"train": {"cats": 3, "dogs": 3}, "test": {"cats": 2, "dogs": 2}}
    test = datasets.from_directory(tmp_path, "test", batch_size=3, drop_empty_classes=True)
    x, y = _batches(test)
    assert test.class_names == ("cats", "dogs")
    np.testing.assert_array_equal(np.round(x[:, 0, 0, 0] * 255), [10, 11, 20, 21])
    np.testing.assert_array_equal(y, [0, 0, 1, 1])


def test_in_class_order_renumbers_the_labels_as_a_models_classes(tmp_path):
    for split, count in (("train", 2), ("test", 1)):
        for name, value in (("cats", 10), ("fish", 30)):
            for i in range(count):
                _save(str(tmp_path / split / name / f"{i}.png"), _constant(value + i))
    name = datasets.register_folder(tmp_path).name  # cats 0, fish 1
    # a model's classes: the folder's at their own indices (the folder's first classes): nothing changes
    assert datasets.in_class_order(name, ("cats", "fish", "zebras")) == name
    ordered = datasets.in_class_order(name, ("ants", "cats", "dogs", "fish"))  # by hand: cats 1, fish 3
    assert ordered != name and datasets.in_class_order(name, ("ants", "cats", "dogs", "fish")) == ordered
    assert datasets.class_names(ordered) == ("ants", "cats", "dogs", "fish") and datasets.info(ordered).classes == 4
    for split, pixels, expected in (("train", [10, 11, 30, 31], [1, 1, 3, 3]), ("test", [10, 30], [1, 3])):
        images, labels = datasets.load_arrays(ordered, split)
        np.testing.assert_array_equal(images[:, 0, 0, 0], pixels)
        np.testing.assert_array_equal(labels, expected)
    np.testing.assert_array_equal(datasets.load_arrays(name, "train")[1], [0, 0, 1, 1])  # the folder's own unchanged
    # a folder name in another Unicode form (macOS writes 'é' as 'e' + a combining accent) is the same class
    for folder, value in (("cafe\u0301", 40), ("tea", 50)):
        _save(str(tmp_path / "drinks" / folder / "0.png"), _constant(value))
    drinks = datasets.register_folder(tmp_path / "drinks").name
    ordered = datasets.in_class_order(drinks, ("caf\u00e9", "milk", "tea"))
    np.testing.assert_array_equal(datasets.load_arrays(ordered)[1], [0, 2])
    with pytest.raises(ValueError, match=r"evaluate: the class folders of .* expected the model's class names \['0', "
                       r"'1'\] .* received \['cats', 'fish'\] among \['cats', 'fish'\]"):  # fmt: skip
        datasets.in_class_order(name, ("0", "1"), "evaluate")


def test_a_limit_on_a_folder_draws_from_every_class_in_proportion(tmp_path, capsys):
    """A folder lists its classes one after another: its first 6 images would all be cats. --limit, --eval-limit
    and the evaluation commands' --limit keep that many drawn class by class instead (by hand: 6 of 8 cats and 4
    dogs are 4 cats and 2 dogs), in the folder's order; a named dataset keeps its first images."""
    for i in range(8):
        _save(str(tmp_path / "cats" / f"{i}.png"), _constant(10 + i))
    for i in range(4):
        _save(str(tmp_path / "dogs" / f"{i}.png"), _constant(100 + i))
    name = datasets.register_folder(tmp_path).name
    images, labels = datasets.load_arrays(name)
    kept_images, kept_labels = datasets.first_examples(name, images, labels, 6)
    assert kept_labels.tolist() == [0, 0, 0, 0, 1, 1]
    assert set(kept_images[:4, 0, 0, 0]) <= set(range(10, 18)) and set(kept_images[4:, 0, 0, 0]) <= {100, 101, 102, 103}
    assert list(kept_images[:, 0, 0, 0]) == sorted(kept_images[:, 0, 0, 0])  # in the folder's order
    _, loaded = _batches(datasets.load(name, batch_size=8, shuffle=False, limit=6))
    assert loaded.tolist() == [0, 0, 0, 0, 1, 1]
    assert datasets.first_examples(name, images, labels, 20)[1].tolist() == labels.tolist()  # more than there are
    sample_images, sample_labels = datasets.load_arrays("mnist_sample")
    np.testing.assert_array_equal(
        datasets.first_examples("mnist_sample", sample_images, sample_labels, 5)[1], sample_labels[:5]
    )
    # train: the hold-out (one image of each class) first, then 4 of the 10 left, drawn class by class (3 + 1)
    recipe = recipes.get("EffCapsNet", "mnist_sample").replace(batch_size=16, validation_examples=2)
    split = train_module.split_training_data(recipe, name, None, False, seed=0, limit=4, multi_worker=False)
    trained, trained_labels = _batches(split.training(None))
    held_out, held_out_labels = _batches(split.validation)
    assert sorted(trained_labels.tolist()) == [0, 0, 0, 1] and sorted(held_out_labels.tolist()) == [0, 1]
    assert (
        "limit 4: training on 4 of the 10 images left after the hold-out, drawn class by class: 'cats' 3, 'dogs' 1"
        in (capsys.readouterr().out)
    )
    assert not set(np.round(trained[:, 0, 0, 0] * 255).tolist()) & set(np.round(held_out[:, 0, 0, 0] * 255).tolist())


# ------------------------------------------------------------------------------------- the hold-out


@pytest.fixture
def counted_folder(tmp_path):
    """Classes of 10, 6 and 4 gray images, image ``i`` a constant ``i`` (so an output image names itself)."""
    index = 0
    for name, count in (("a", 10), ("b", 6), ("c", 4)):
        for i in range(count):
            _save(str(tmp_path / name / f"{i:02d}.png"), _constant(index))
            index += 1
    return tmp_path


def _ids(dataset):
    images, labels = _batches(dataset)
    return np.round(images[:, 0, 0, 0] * 255).astype(int), labels


def test_stratified_counts_by_hand():
    # Shares 2.5, 1.5, 1.0 -> 2, 1, 1 and the missing one to the largest remainder (a tie: the lower class).
    np.testing.assert_array_equal(validation.stratified_counts([10, 6, 4], 5), [3, 1, 1])
    np.testing.assert_array_equal(validation.stratified_counts([10, 6, 4], 2), [1, 1, 0])  # shares 1.0, 0.6, 0.4
    np.testing.assert_array_equal(validation.stratified_counts([1, 9], 2), [0, 2])  # a class of one image keeps it
    np.testing.assert_array_equal(
        validation.stratified_counts([1, 1, 1, 5], 4), [0, 0, 0, 4]
    )  # twice round, the capped classes passed over
    np.testing.assert_array_equal(
        validation.stratified_counts([3, 3], 5), [3, 2]
    )  # beyond N - classes: classes are emptied
    with pytest.raises(ValueError, match=r"stratified_counts: argument `examples` expected an integer in \[0, 6\]"):
        validation.stratified_counts([3, 3], 7)


def test_hold_out_is_stratified_disjoint_fixed_and_the_trainers(counted_folder):
    train_ids, train_labels = _ids(datasets.from_directory(counted_folder, validation=5, seed=3, batch_size=4))
    held_ids, held_labels = _ids(datasets.from_directory(counted_folder, "validation", validation=5))
    np.testing.assert_array_equal(np.bincount(held_labels), [3, 1, 1])
    assert sorted(train_ids.tolist() + held_ids.tolist()) == list(range(20))
    np.testing.assert_array_equal(train_labels, np.repeat([0, 1, 2], [10, 6, 4])[train_ids])
    # Independent of `seed`, the same on every call, and a fraction rounds to the same size (0.25 x 20 = 5).
    for kwargs in ({"seed": 11}, {"validation": 0.25}, {}):
        again, _ = _ids(datasets.from_directory(counted_folder, "validation", **{"validation": 5, **kwargs}))
        np.testing.assert_array_equal(np.sort(again), np.sort(held_ids))
    # The default: min(5000, 20 // 10) = 2 images, shares 1.0, 0.6, 0.4 -> one of a, one of b.
    np.testing.assert_array_equal(
        np.bincount(_ids(datasets.from_directory(counted_folder, "validation"))[1], minlength=3), [1, 1, 0]
    )
    # train's hold-out of this folder is the same images, recorded per class.
    name = datasets.register_folder(counted_folder).name
    recipe = recipes.get("EffCapsNet", "mnist_sample").replace(batch_size=8, validation_examples=5)
    split = train_module.split_training_data(recipe, name, None, False, seed=0, limit=None, multi_worker=False)
    np.testing.assert_array_equal(np.sort(_ids(split.validation)[0]), np.sort(held_ids))
    assert split.record == {
        "examples": 5, "seed": 0, "stratified": True, "per_class": {"a": 3, "b": 1, "c": 1}, "training_examples": 15,
        "selection": "stratified by class: each class's share, largest remainders, a training example kept per class",
    }  # fmt: skip


def test_hold_out_arguments(counted_folder):
    for bad in (20, -1, 1.0, 0.0, 0.99, "5", True):
        with pytest.raises(
            ValueError,
            match=r"datasets.from_directory: argument `validation` expected None .* \(N = 20 training images\)",
        ):
            datasets.from_directory(counted_folder, validation=bad)
    with pytest.raises(
        ValueError,
        match=r"argument `validation` expected a hold-out of at least one image for subset='validation'.*received 0",
    ):
        datasets.from_directory(counted_folder, "validation", validation=0)
    assert len(_ids(datasets.from_directory(counted_folder, validation=0))[0]) == 20
    with pytest.raises(
        ValueError,
        match=r"argument `subset` expected 'train' or 'validation' for .* no train/ and test/ sub-folders, received 'test'",
    ):
        datasets.from_directory(counted_folder, "test")
    with pytest.raises(
        ValueError, match=r"argument `subset` expected one of \['test', 'train', 'validation'\], received 'val'"
    ):
        datasets.from_directory(counted_folder, "val")
    with pytest.raises(
        ValueError,
        match=r"argument `image_size` expected None \(inferred\) or \(height, width\), two positive integers, received 32",
    ):
        datasets.from_directory(counted_folder, image_size=32)
    with pytest.raises(ValueError, match=r"argument `channels` expected one of \['1', '3'\], received 4"):
        datasets.register_folder(counted_folder, channels=4)
    with pytest.raises(
        ValueError, match=r"datasets.folder_summary: argument `name` expected the name of a registered folder"
    ):
        datasets.folder_summary("mnist")


# ------------------------------------------------------------------------------------- bad folders


def test_missing_empty_and_single_class_folders(tmp_path):
    with pytest.raises(
        FileNotFoundError, match=r"datasets.register_folder: argument `path` expected an existing folder of images"
    ):
        datasets.register_folder(tmp_path / "nowhere")
    _save(str(tmp_path / "files" / "picture.png"), _random(2, 2))
    with pytest.raises(
        NotADirectoryError, match=r"datasets.from_directory: argument `path` expected a folder of images .* not a file"
    ):
        datasets.from_directory(tmp_path / "files" / "picture.png")
    with pytest.raises(
        datasets.DataFormatError,
        match=r"the folder holds no class sub-folder, only 1 files \(put each image in its class's sub-folder\)",
    ):
        datasets.register_folder(tmp_path / "files")
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        datasets.DataFormatError, match=r"at least 2 classes .* the folder holds no class sub-folder\.$"
    ):
        datasets.register_folder(tmp_path / "empty")
    _save(str(tmp_path / "one" / "cats" / "0.png"), _random(2, 2))
    with pytest.raises(datasets.DataFormatError, match=r"a classifier needs two.*the single class folder 'cats'"):
        datasets.register_folder(tmp_path / "one")
    _save(str(tmp_path / "split" / "train" / "cats" / "0.png"), _random(2, 2))
    _save(str(tmp_path / "split" / "train" / "dogs" / "0.png"), _random(2, 2))
    with pytest.raises(
        datasets.DataFormatError, match=r"single class folder 'train' \(train/ is read as a split only next to test/\)"
    ):
        datasets.register_folder(tmp_path / "split")
    _save(str(tmp_path / "split" / "test" / "cats" / "0.png"), _random(2, 2))
    _save(str(tmp_path / "split" / "test" / "birds" / "0.png"), _random(2, 2))
    with pytest.raises(
        datasets.DataFormatError, match=r"same class folders .* \['dogs'\] only in train/ and \['birds'\] only in test/"
    ):
        datasets.register_folder(tmp_path / "split")
    os.rename(tmp_path / "split" / "test" / "birds", tmp_path / "split" / "test" / "dogs")
    (tmp_path / "split" / "test" / "dogs" / "0.png").write_bytes(b"")
    (tmp_path / "split" / "test" / "cats" / "0.png").write_bytes(b"")
    with pytest.raises(
        datasets.DataFormatError,
        match=r"expected images in test/'s class folders, .* whose test/ holds none that decodes",
    ):
        datasets.register_folder(tmp_path / "split")
    (tmp_path / "texts" / "a").mkdir(parents=True)
    (tmp_path / "texts" / "b").mkdir()
    (tmp_path / "texts" / "a" / "notes.txt").write_text("no image")
    with pytest.raises(
        datasets.DataFormatError,
        match=r"expected image files .* hold none \(1 files that are not PNG/JPEG/BMP/GIF/WebP\)",
    ):
        datasets.register_folder(tmp_path / "texts")


def test_corrupt_files_empty_classes_and_junk_are_skipped_and_counted(tmp_path, capsys):
    root = tmp_path / "data"
    for name in ("a", "b"):
        for i in range(2):
            _save(str(root / name / f"{i}.png"), _random(3, 3, 3))
    _save(str(root / "b" / "whole.jpg"), _random(8, 8, 3))
    jpeg_bytes = (root / "b" / "whole.jpg").read_bytes()
    (root / "a" / "truncated.jpg").write_bytes(jpeg_bytes[: len(jpeg_bytes) // 2])
    (root / "a" / "text.png").write_text("not a picture")
    (root / "a" / "empty.gif").write_bytes(b"")
    (root / "a" / "notes.txt").write_text("x")
    (root / "b" / "Thumbs.db").write_bytes(b"x")
    (root / "a" / ".DS_Store").write_bytes(b"x")
    (root / ".ipynb_checkpoints").mkdir()  # a hidden folder is no class
    (root / "c_empty").mkdir()
    (root / "d_only_corrupt").mkdir()
    (root / "d_only_corrupt" / "0.png").write_bytes(b"\x89PNG broken")
    (root / "README.md").write_text("my pictures")
    before = _tree(root)
    with pytest.raises(
        datasets.DataFormatError,
        match=r"where 'c_empty' holds no image file .*; none of the 1 image files of 'd_only_corrupt' decodes "
        r"\(e\.g\. d_only_corrupt/0\.png\)\. ",
    ):
        datasets.register_folder(root)
    info = datasets.register_folder(root, drop_empty_classes=True)
    assert info.class_names == ("a", "b") and info.image_shape == (3, 3, 3)
    images, labels = datasets.load_arrays(info.name)
    np.testing.assert_array_equal(labels, [0, 0, 1, 1, 1])
    record = datasets.folder_summary(info.name)
    assert record["resized"] == 1 and images.shape == (5, 3, 3, 3)
    assert record["skipped"] == {"hidden": 2, "outside_class_folders": 1, "not_image": 2, "undecodable": 4}
    assert record["skipped_extensions"] == {".txt": 1, ".db": 1}
    assert record["skipped_named"]["undecodable"] == ["a/empty.gif", "a/text.png", "a/truncated.jpg"]  # the first three
    assert record["empty_classes"] == ["c_empty", "d_only_corrupt"] and record["images_of_empty_classes"] == 0
    printed = capsys.readouterr().out
    assert (
        "warning: skipped 4 files that do not decode (corrupt, truncated or another format): a/empty.gif, a/text.png, a/truncated.jpg, ..."
        in printed
    )
    assert (
        "warning: skipped the class folders without a readable training image ['c_empty', 'd_only_corrupt']" in printed
    )
    assert "skipped 2 files that are not PNG/JPEG/BMP/GIF/WebP: .db 1, .txt 1" in printed
    assert _tree(root) == before  # nothing written, nothing touched

    bad = tmp_path / "all_bad"
    for name in ("a", "b"):
        (bad / name).mkdir(parents=True)
        (bad / name / "0.jpg").write_bytes(jpeg_bytes[:40])
    with pytest.raises(
        datasets.DataFormatError,
        match=r"expected images that TensorFlow decodes .* 2 image files all fail to decode .* e\.g\. a/0\.jpg",
    ):
        datasets.register_folder(bad)


def test_nested_folders_and_symlinks(tmp_path):
    root = tmp_path / "data"
    outside = tmp_path / "elsewhere"
    first = _save(str(root / "a" / "0.png"), _random(2, 2, 3))
    nested = _save(str(root / "a" / "deeper" / "down" / "1.png"), _random(2, 2, 3))
    linked_file = _save(str(outside / "file.png"), _random(2, 2, 3))
    linked_folder = _save(str(outside / "folder" / "2.png"), _random(2, 2, 3))
    os.makedirs(root / "b")
    os.symlink(outside / "file.png", root / "b" / "link.png")
    os.symlink(outside / "folder", root / "b" / "linked")
    os.symlink(root, root / "b" / "loop")  # a cycle: not followed
    os.symlink(root / "a", root / "a" / "deeper" / "back")  # a link to an ancestor class folder: a cycle
    os.symlink(tmp_path / "missing.png", root / "b" / "broken.png")
    before = _tree(root)
    info = datasets.register_folder(root)
    images, labels = datasets.load_arrays(info.name)
    # a: 0.png, deeper/down/1.png; b: link.png, linked/2.png (sorted names at every level).
    np.testing.assert_array_equal(images, np.stack([first, nested, linked_file, linked_folder]))
    np.testing.assert_array_equal(labels, [0, 0, 1, 1])
    record = datasets.folder_summary(info.name)
    assert record["nested_folders"] == 3 and record["skipped"] == {"symlink_cycle": 2, "broken_link": 1}
    assert sorted(record["skipped_named"]["symlink_cycle"]) == ["a/deeper/back", "b/loop"]
    assert _tree(root) == before


def test_registration_names(counted_folder):
    info = datasets.register_folder(counted_folder, name="my images")
    assert datasets.register_folder(counted_folder, name="my images") is info and "my images" in datasets.available()
    assert datasets.load_arrays("my images")[0].shape == (20, 4, 4, 1)
    assert datasets.folder_summary("my images")["images"] == {"train": 20}
    with pytest.raises(ValueError, match=r"register_dataset: dataset 'mnist' is already registered"):
        datasets.register_folder(counted_folder, name="mnist")
    with pytest.raises(
        TypeError, match=r"datasets.register_folder: argument `name` expected None or a non-empty string, received 3"
    ):
        datasets.register_folder(counted_folder, name=3)
    with pytest.raises(TypeError, match=r"datasets.register_folder: argument `path` expected a folder path"):
        datasets.register_folder(None)
