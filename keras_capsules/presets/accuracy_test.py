"""Every registered preset, loaded through ``weights=``, reaches the accuracy its registry record states on the fixed
subset, fed the dataset's images as they come, and ``decode_predictions`` names its classes.

Parameterised over the whole registry: a preset is tested the moment it is registered. MNIST presets
use the embedded sample (the official test images); the others need the dataset's files in
``$KERAS_CAPSULES_DATA`` (or the data folder beside a source checkout) and skip, saying so, without them.
"""

import functools
import os

import numpy as np
import pytest

from keras_capsules import applications, datasets, presets
from keras_capsules.testing.tiers import large

DATA = os.environ.get(
    "KERAS_CAPSULES_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data")
)
TOLERANCE = 0.003  # 0.3 points: the recorded subset accuracy was measured with the same file
#: The publishers' class names, typed here independently of the registry.
NAMES = {
    "mnist": tuple("0123456789"),
    "fashion_mnist": (
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
    ),
}


def _data_dir(dataset):
    if dataset == "mnist_sample":
        return None
    folder = {"fashion_mnist": "fashion-mnist"}.get(dataset, dataset)
    if not os.path.isdir(os.path.join(DATA, folder)):
        pytest.skip(f"{dataset} files absent from {os.path.abspath(DATA)} (set KERAS_CAPSULES_DATA)")
    return DATA


@functools.lru_cache(maxsize=None)
def _subset_predictions(key):
    """``(scores, labels)`` of preset ``key`` on its fixed subset: raw uint8 images scaled to [0, 1], no transform."""
    model_name, name = key.split("/", 1)
    subset = presets.get(model_name, name).subset
    images, labels = datasets.load_arrays(subset["dataset"], subset["split"], data_dir=_data_dir(subset["dataset"]))
    images, labels = images[: subset["limit"]], labels[: subset["limit"]]
    model = getattr(applications, model_name)(weights=name)
    assert tuple(model.inputs[0].shape[1:]) == images.shape[1:]  # the dataset's own image shape
    scores = np.concatenate(
        [model.predict_on_batch(images[i : i + 250].astype("float32") / 255.0) for i in range(0, len(images), 250)]
    )
    return scores, labels


#: AgreementGLOM's presets take about 25 s each to run on their subsets on 2 cores: the large tier checks them.
SLOW = "AgreementGLOM/"


@pytest.mark.parametrize(
    "key", [pytest.param(k, marks=large) if k.startswith(SLOW) else k for k in presets.available()]
)
def test_preset_reaches_its_recorded_subset_accuracy(key):
    preset = presets.get(*key.split("/", 1))
    scores, labels = _subset_predictions(key)
    assert len(labels) == preset.subset["limit"]
    accuracy = float(np.mean(np.argmax(scores, axis=-1) == labels))
    assert abs(accuracy - preset.subset_accuracy) <= TOLERANCE, (
        f"{key}: {accuracy:.4f} vs recorded {preset.subset_accuracy:.4f}"
    )
    assert preset.test_examples == 10_000  # the full official test set (MNIST, Fashion-MNIST)


# One preset per dataset (the slow ones last): the names depend on the dataset only.
FIRST_PER_DATASET = {}
for _key in sorted(presets.available(), key=lambda k: k.startswith(SLOW)):
    FIRST_PER_DATASET.setdefault(presets.get(*_key.split("/", 1)).dataset, _key)


@pytest.mark.parametrize("key", sorted(FIRST_PER_DATASET.values()))
def test_decode_predictions_names_the_classes_of_a_preset_models_output(key):
    preset = presets.get(*key.split("/", 1))
    scores, labels = _subset_predictions(key)
    scores, labels = scores[:100], labels[:100]
    decoded = presets.decode_predictions(scores, key, top=3)
    names = NAMES[preset.dataset]
    for row, example_scores, label in zip(decoded, scores, labels):
        assert [index for index, _, _ in row] == list(np.argsort(-example_scores)[:3])
        assert [name for _, name, _ in row] == [names[index] for index, _, _ in row]
        assert row[0][2] == pytest.approx(float(example_scores.max()))
    right = [row[0] for row, label in zip(decoded, labels) if row[0][0] == label]
    assert len(right) >= 80  # the model classifies most of them right, and then says the true class's name
    class_0 = [name for index, name, _ in right if index == 0]
    assert class_0 and set(class_0) == {names[0]}  # e.g. "T-shirt/top" for a Fashion-MNIST class-0 image
