"""train(weights=PRESET, freeze_backbone_epochs=N): the preset's backbone, frozen for N epochs, then trained with the new class capsules."""

import importlib

import keras
import numpy as np
import pytest

from keras_capsules import presets
from keras_capsules.testing.tiers import large

train_module = importlib.import_module("keras_capsules.training.train")


class _Conv1AfterEachEpoch(keras.callbacks.Callback):
    def __init__(self, kernels):
        super().__init__()
        self.kernels = kernels

    def on_epoch_end(self, epoch, logs=None):
        self.kernels.append(np.array(self.model.get_layer("conv1").weights[0]))


@large
def test_frozen_first_stage_keeps_the_preset_backbone_then_trains_it(tmp_path):
    with np.load(presets.locate(presets.get("EffCapsNet", "mnist"))) as archive:
        preset_kernel = archive["conv1/0"].astype(np.float32)
    kernels = []
    metrics = train_module.train(
        "EffCapsNet", "mnist_sample", epochs=2, batch_size=16, limit=32, eval_limit=16, output=str(tmp_path), verbose=0, export=False,
        augmentation=None, validation_examples=16, weights="mnist", freeze_backbone_epochs=1, callbacks=[_Conv1AfterEachEpoch(kernels)],
    )  # fmt: skip
    assert [stage["name"] for stage in metrics["stages"]] == ["frozen_backbone", "fine_tune"]
    assert metrics["fine_tuned"]["preset"] == "EffCapsNet/mnist" and metrics["fine_tuned"]["new_layers"] == [
        "class_caps",
        "decoder",
    ]
    assert metrics["arguments"]["weights"] == "mnist" and metrics["epochs_completed"] == 2
    np.testing.assert_array_equal(kernels[0], preset_kernel)  # stage 1: the backbone did not move
    assert not np.array_equal(kernels[1], preset_kernel)  # stage 2: it trains
    assert list(metrics["recipe"]["stages"][0]["trainable"]) == ["class_caps", "decoder"]


def test_freeze_without_weights_or_too_long_is_refused(tmp_path):
    common = dict(epochs=2, limit=16, output=str(tmp_path), verbose=0, export=False)
    with pytest.raises(ValueError, match=r"`freeze_backbone_epochs` expected 0 without `weights`"):
        train_module.train("EffCapsNet", "mnist_sample", freeze_backbone_epochs=1, **common)
    with pytest.raises(ValueError, match=r"`freeze_backbone_epochs` expected an integer in 1\.\.1 .* received 2"):
        train_module.train("EffCapsNet", "mnist_sample", weights="mnist", freeze_backbone_epochs=2, **common)
