"""``train(recompute=...)``: the memory plan's choice reaches the traced step, and metrics.json records it."""

import keras
import pytest

from keras_capsules.ops.remat import recomputing
from keras_capsules.training import train


class _SeenWhileTraining(keras.callbacks.Callback):
    """Whether rematerialisation was on while ``fit`` ran (and traced the step)."""

    seen = []

    def on_train_batch_begin(self, batch, logs=None):
        self.seen.append(recomputing())


@pytest.mark.parametrize("recompute", [False, True])
def test_the_setting_holds_while_the_step_trains_and_is_recorded(tmp_path, recompute):
    seen = _SeenWhileTraining()
    seen.seen = []
    metrics = train(
        "EffCapsNet", "mnist_sample", epochs=1, batch_size=16, limit=32, eval_limit=16, output=str(tmp_path),
        verbose=0, export=False, validation_examples=0, callbacks=[seen], recompute=recompute,
    )  # fmt: skip
    assert seen.seen == [recompute, recompute] and metrics["recompute"] is recompute
    assert recomputing()  # and the default again afterwards


def test_auto_trains_a_small_step_without_rematerialisation(tmp_path):
    """EffCapsNet at batch 16 needs about 1 GB (the memory plan), far under three quarters of any test machine's."""
    plan = train("EffCapsNet", "mnist_sample", output=str(tmp_path), verbose=0, memory_check="only")["plan"]
    assert plan.recompute is False


@pytest.mark.parametrize("bad", ["on", 1, None])
def test_anything_but_auto_true_or_false_is_refused(tmp_path, bad):
    with pytest.raises(TypeError, match=r"train: argument `recompute` expected 'auto', True or False, received"):
        train("EffCapsNet", "mnist_sample", output=str(tmp_path), recompute=bad)
