"""benchmarks/accelerator_check.py's ConsensusCapsNet step check: one record per paper router, the
library's loss for each, and the hours of an MNIST epoch computed by hand; unknown checks refused."""

import types

import keras
import pytest

from benchmarks import accelerator_check as check
from keras_capsules import losses


def test_consensus_step_records_each_router_with_its_loss_and_epoch_hours(monkeypatch):
    built, timed = [], []
    monkeypatch.setattr(
        check,
        "applications",
        types.SimpleNamespace(ConsensusCapsNet=lambda **kwargs: built.append(kwargs) or kwargs["router"]),
    )
    monkeypatch.setattr(
        check,
        "measure_step_seconds",
        lambda model, loss, batch, steps, warmup: timed.append((model, loss, batch, steps, warmup)) or 1.09,
    )
    records = []
    check.check_consensus_steps(records.append, batch_size=64, steps=10, warmup=3)
    assert [r["router"] for r in records] == ["dynamic", "em", "kernel", "lstm"]
    assert all(kwargs == {"input_shape": (28, 28, 1), "classes": 10, "router": kwargs["router"]} for kwargs in built)
    # 60,000 images at batch 64: 938 steps (the last one partial); 1.09 s each is 0.284 h.
    assert all(r["hours_per_mnist_epoch"] == 0.284 and r["step_s"] == 1.09 and r["batch_size"] == 64 for r in records)
    loss_types = {model: type(loss) for model, loss, *_ in timed}
    assert loss_types["dynamic"] is losses.MarginLoss and loss_types["em"] is losses.MarginLoss
    assert (
        loss_types["kernel"] is keras.losses.SparseCategoricalCrossentropy and timed[2][1].get_config()["from_logits"]
    )
    assert loss_types["lstm"] is keras.losses.SparseCategoricalCrossentropy
    assert {entry[2:] for entry in timed} == {(64, 10, 3)}


def test_unknown_check_is_refused_naming_the_choices(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["accelerator_check.py", "--checks", "fit,speed"])
    with pytest.raises(SystemExit):
        check.main()
    assert (
        "--checks: unknown speed; expected some of preset, fit, data_parallel, consensus_step"
        in capsys.readouterr().err
    )
