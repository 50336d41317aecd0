"""Every registered preset, loaded through ``weights=``, reaches the accuracy its registry record states on the fixed subset.

Parameterised over the whole registry: a preset is tested the moment it is registered. MNIST presets
use the embedded sample (the official test images); the others need the dataset's files in
``$KERAS_CAPSULES_DATA`` (or the data folder beside a source checkout) and skip, saying so, without them.
"""

import os

import numpy as np
import pytest

from keras_capsules import applications, datasets, presets

DATA = os.environ.get("KERAS_CAPSULES_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data"))
TOLERANCE = 0.003  # 0.3 points: the recorded subset accuracy was measured with the same file


def _data_dir(dataset):
    if dataset == "mnist_sample":
        return None
    folder = {"fashion_mnist": "fashion-mnist"}.get(dataset, dataset)
    if not os.path.isdir(os.path.join(DATA, folder)):
        pytest.skip(f"{dataset} files absent from {os.path.abspath(DATA)} (set KERAS_CAPSULES_DATA)")
    return DATA


@pytest.mark.parametrize("key", presets.available())
def test_preset_reaches_its_recorded_subset_accuracy(key):
    model_name, name = key.split("/", 1)
    preset = presets.get(model_name, name)
    subset = preset.subset
    data_dir = _data_dir(subset["dataset"])
    model = getattr(applications, model_name)(weights=name)
    correct = total = 0
    batches = datasets.load(
        subset["dataset"], subset["split"], batch_size=250, data_dir=data_dir, shuffle=False, limit=subset["limit"],
        augment=preset.evaluation, training=False,
    )
    for images, labels in batches:
        correct += int(np.sum(np.argmax(model.predict_on_batch(images), axis=-1) == labels.numpy()))
        total += len(labels)
    assert total == subset["limit"]
    assert abs(correct / total - preset.subset_accuracy) <= TOLERANCE, f"{key}: {correct / total:.4f} vs recorded {preset.subset_accuracy:.4f}"
    assert preset.test_examples == 10_000  # the full official test set (MNIST, Fashion-MNIST)
