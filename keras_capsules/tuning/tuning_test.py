import json

import keras
import keras_tuner
import numpy as np
import pytest

from keras_capsules.testing.tiers import large
from keras_capsules.tuning import CapsuleHyperModel, HyperCapsNet, HyperEffCapsNet, tune


def _class_caps(model):
    return model.get_layer("class_caps")


def test_defaults_are_the_paper_model():
    hypermodel = HyperEffCapsNet(application_kwargs={"reconstruction": False})
    hp = keras_tuner.HyperParameters()
    model = hypermodel.build(hp)
    assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == 161_824  # docs/reference/models.md#effcapsnet
    assert hp.values["router"] == "self_attention" and hp.values["learning_rate"] == pytest.approx(5e-4)
    assert "routing_iterations" not in hp.values or not hp.is_active("routing_iterations")
    assert float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)) == pytest.approx(5e-4)


def test_overrides_reach_the_model():
    hp = keras_tuner.HyperParameters()
    hp.Fixed("router", "dynamic")
    hp.Fixed("routing_iterations", 2)
    hp.Fixed("class_capsule_dim", 8)
    model = HyperCapsNet(routers=["dynamic", "self_attention"]).build(hp)
    caps = _class_caps(model)
    assert caps.router.router_name == "dynamic" and caps.router.iterations == 2 and caps.capsule_dim == 8
    assert hp.values["reconstruction_weight"] == pytest.approx(0.0005)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="classes"):
        CapsuleHyperModel("EffCapsNet")
    with pytest.raises(ValueError, match="application"):
        CapsuleHyperModel("NoSuchNet", classes=10)
    with pytest.raises(ValueError, match="routers"):
        CapsuleHyperModel("EffCapsNet", classes=10, routers=["nope"])


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="keras-tuner search with tf.data inputs runs on the TensorFlow backend here",
)
@large
def test_two_trial_search_and_the_best_model_retrains(tmp_path):
    tuner, best = tune(
        "EffCapsNet",
        "mnist_sample",
        max_trials=2,
        epochs=1,
        batch_size=32,
        limit=128,
        directory=str(tmp_path),
        routers=["self_attention", "dynamic"],
        reconstruction=False,
        verbose=0,
    )
    assert len(tuner.oracle.trials) == 2
    assert all(t.status == "COMPLETED" for t in tuner.oracle.trials.values())
    saved = json.loads((tmp_path / "EffCapsNet-mnist_sample" / "best_hyperparameters.json").read_text())
    assert saved == best.values
    model = tuner.hypermodel.build(best)
    assert _class_caps(model).router.router_name == best.values["router"]
    x = np.random.default_rng(0).uniform(size=(16, 28, 28, 1)).astype("float32")
    history = model.fit(x, np.arange(16) % 10, epochs=1, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"][0])


@large
def test_tune_command(tmp_path, capsys):
    from keras_capsules import cli

    code = cli.main(
        [
            "tune",
            "EffCapsNet",
            "--max-trials",
            "1",
            "--limit",
            "64",
            "--batch-size",
            "32",
            "--routers",
            "self_attention",
            "--output",
            str(tmp_path),
            "--quiet",
        ]
    )
    assert code == 0
    assert "best validation accuracy" in capsys.readouterr().out
    project = tmp_path / "EffCapsNet-mnist_sample"
    assert (project / "best_hyperparameters.json").is_file()
    trial_folders = sorted(p.name for p in project.iterdir() if p.name.startswith("trial_"))
    assert len(trial_folders) == 1
    # Running it again continues the finished search instead of discarding it: no new trial.
    assert (
        cli.main(
            [
                "tune",
                "EffCapsNet",
                "--max-trials",
                "1",
                "--limit",
                "64",
                "--batch-size",
                "32",
                "--routers",
                "self_attention",
                "--output",
                str(tmp_path),
                "--quiet",
            ]
        )
        == 0
    )
    assert sorted(p.name for p in project.iterdir() if p.name.startswith("trial_")) == trial_folders
