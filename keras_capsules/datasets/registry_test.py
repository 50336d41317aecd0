"""Class names: every registered dataset has one name per class; derived sets take their source's."""

import pytest

from keras_capsules import datasets
from keras_capsules.datasets import registry


@pytest.mark.parametrize("name", datasets.available())
def test_every_dataset_names_each_class(name):
    names = datasets.class_names(name)
    assert len(names) == datasets.num_classes(name) and all(isinstance(n, str) and n for n in names)
    assert len(set(names)) == len(names)


def test_official_names_in_label_order():
    assert datasets.class_names("fashion_mnist") == (
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
    )
    assert datasets.class_names("mnist") == datasets.class_names("svhn") == tuple("0123456789")
    assert datasets.class_names("cifar10")[::3] == ("airplane", "cat", "frog", "truck")
    assert datasets.class_names("smallnorb") == ("animal", "human", "airplane", "truck", "car")
    fine = datasets.class_names("cifar100")  # CIFAR-100's fine label names are in alphabetical order
    assert list(fine) == sorted(fine) and (fine[0], fine[1], fine[-1]) == ("apple", "aquarium_fish", "worm")
    assert datasets.class_names("expanded_mnist") == datasets.class_names("multi_mnist") == tuple("0123456789")


def test_registered_names_are_checked_and_unnamed_sets_count(monkeypatch):
    monkeypatch.setattr(registry, "_DATASETS", dict(registry._DATASETS))  # registrations end with the test
    datasets.register_dataset(datasets.DatasetInfo("unnamed", (2, 2, 1), 3, ("train",)))
    assert datasets.class_names("unnamed") == ("0", "1", "2")
    with pytest.raises(
        ValueError, match=r"register_dataset: argument `class_names` of dataset 'three' expected 3 names.*received 2"
    ):
        datasets.register_dataset(datasets.DatasetInfo("three", (2, 2, 1), 3, ("train",), class_names=("a", "b")))
    with pytest.raises(
        ValueError, match=r"datasets.class_names: argument `name` expected one of .*received 'imagenet'"
    ):
        datasets.class_names("imagenet")
