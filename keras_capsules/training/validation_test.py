"""The validation protocol: a fixed hold-out that never overlaps training, reported every epoch; the test set read once."""

import hashlib
import importlib
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import datasets, recipes
from keras_capsules.datasets import holdout as validation
from keras_capsules.testing.tiers import large

train_module = importlib.import_module("keras_capsules.training.train")


def test_split_indices_partition_the_split():
    train_indices, held_out = validation.split_indices(100, 10)
    assert len(train_indices) == 90 and len(held_out) == 10
    assert not set(train_indices.tolist()) & set(held_out.tolist())
    assert sorted(train_indices.tolist() + held_out.tolist()) == list(range(100))
    # Fixed: the same draw on every call, whatever the training seed.
    np.testing.assert_array_equal(validation.split_indices(100, 10)[1], held_out)
    assert len(validation.split_indices(100, 0)[1]) == 0


def test_sizes():
    assert validation.default_size(60000) == 5000  # MNIST's training split
    assert validation.default_size(8000) == 800  # the embedded sample's
    assert validation.resolve_size(None, 8000) == 800
    assert validation.resolve_size(np.int64(3), 8000) == 3
    assert validation.resolve_size(0, 8000) == 0
    for bad in (-1, 8000, 2.5, True):
        with pytest.raises(
            ValueError, match=r"train: argument `validation_examples` expected None or an integer in \[0, 8000\)"
        ):
            validation.resolve_size(bad, 8000)


def _digests(dataset):
    return [hashlib.sha1(np.asarray(image).tobytes()).hexdigest() for images, _ in dataset for image in images.numpy()]


def test_training_data_never_contains_the_hold_out():
    recipe = recipes.get("EffCapsNet", "mnist_sample").replace(batch_size=500, validation_examples=300)
    split = train_module.split_training_data(
        recipe, "mnist_sample", None, False, seed=0, limit=None, multi_worker=False
    )
    trained, held_out = _digests(split.training(None)), _digests(split.validation)
    images, _ = datasets.load_arrays("mnist_sample", "train")
    assert len(held_out) == 300 and len(trained) == len(images) - 300
    assert not set(trained) & set(held_out)
    # Independently of the code's indices: together they are the split's images, each once.
    everything = sorted(hashlib.sha1((image.astype(np.float32) / 255.0).tobytes()).hexdigest() for image in images)
    assert sorted(trained + held_out) == everything
    assert split.record == {
        "examples": 300,
        "seed": validation.VALIDATION_SEED,
        "selection": "uniform draw without replacement from the training split",
        "training_examples": len(images) - 300,
    }


def _count_test_reads(mp, reads):
    """Makes ``datasets.load``'s test split append the size of every batch it serves to ``reads``."""
    load = datasets.load

    def counting_load(name, split="train", *args, **kwargs):
        dataset = load(name, split, *args, **kwargs)
        if split != "test":
            return dataset

        def count(images):
            reads.append(len(images))
            return images

        def counted(x, y):
            return tf.ensure_shape(tf.numpy_function(count, [x], tf.float32, stateful=True), x.shape), y

        return dataset.map(counted)

    mp.setattr(datasets, "load", counting_load)


@pytest.fixture(scope="module")
def counted_run(tmp_path_factory):
    """A two-epoch run whose test split counts every example read."""
    reads = []
    output = str(tmp_path_factory.mktemp("validated"))
    mp = pytest.MonkeyPatch()
    _count_test_reads(mp, reads)
    try:
        metrics = train_module.train(
            "EffCapsNet",
            "mnist_sample",
            epochs=2,
            batch_size=16,
            limit=48,
            eval_limit=40,
            output=output,
            verbose=0,
            export=False,
            augmentation=None,
            model_kwargs={"reconstruction": False},
            validation_examples=24,
        )
    finally:
        mp.undo()
    return metrics, reads, output


def test_validation_reported_every_epoch_and_test_read_once(counted_run):
    metrics, reads, output = counted_run
    assert sum(reads) == 40  # eval_limit examples, each read exactly once, after training
    assert len(metrics["history"]["val_accuracy"]) == 2 and len(metrics["history"]["accuracy"]) == 2
    assert metrics["validation"]["examples"] == 24 and metrics["validation"]["training_examples"] == 48
    assert metrics["validation_accuracy"] == metrics["history"]["val_accuracy"][-1]
    # Accuracy on 24 images is a multiple of 1/24.
    assert abs(metrics["validation_accuracy"] * 24 - round(metrics["validation_accuracy"] * 24)) < 1e-4
    with open(os.path.join(output, "metrics.json")) as handle:
        assert json.load(handle)["recipe"]["validation_examples"] == 24


@large
def test_validation_off_is_recorded(tmp_path):
    metrics = train_module.train(
        "EffCapsNet",
        "mnist_sample",
        epochs=1,
        batch_size=16,
        limit=16,
        eval_limit=16,
        output=str(tmp_path),
        verbose=0,
        export=False,
        augmentation=None,
        model_kwargs={"reconstruction": False},
        validation_examples=0,
    )
    assert metrics["validation"]["examples"] == 0 and metrics["validation"]["reason"] == "validation_examples=0"
    assert "val_accuracy" not in metrics["history"] and metrics["validation_accuracy"] is None


@large
def test_a_first_phase_with_eval_on_empty_reads_no_test_split(tmp_path, monkeypatch):
    """A schedule trained as two commands: the first (``eval_on=()``) reads no test image, the resumed second reads them once."""
    reads = []
    _count_test_reads(monkeypatch, reads)
    common = dict(batch_size=16, limit=32, eval_limit=24, output=str(tmp_path), verbose=0, export=False, augmentation=None,
                  model_kwargs={"reconstruction": False}, validation_examples=16)  # fmt: skip
    first = train_module.train("EffCapsNet", "mnist_sample", epochs=1, eval_on=(), **common)
    assert reads == [] and first["evaluations"] == {} and first["test_accuracy"] is None
    assert len(first["history"]["val_accuracy"]) == 1
    second = train_module.train("EffCapsNet", "mnist_sample", epochs=2, **common)
    assert sum(reads) == 24 and second["resumed_from_epoch"] == 1 and second["epochs_completed"] == 2
    assert abs(second["test_accuracy"] * 24 - round(second["test_accuracy"] * 24)) < 1e-4
