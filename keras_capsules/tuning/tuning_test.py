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


def _shades(root, counts):
    """A folder of 28x28 gray PNGs, class ``i`` a constant shade per image; ``counts``: images per class."""
    from PIL import Image

    for label, count in enumerate(counts):
        for i in range(count):
            (root / f"c{label}").mkdir(parents=True, exist_ok=True)
            Image.fromarray(np.full((28, 28), 40 * label + i, np.uint8)).save(root / f"c{label}" / f"{i}.png")
    return root


def test_a_folder_validates_on_every_classs_share_and_limits_class_by_class(tmp_path, monkeypatch):
    from keras_capsules import datasets
    from keras_capsules.datasets import folders, registry
    from keras_capsules.tuning import search

    monkeypatch.setattr(registry, "_DATASETS", dict(registry._DATASETS))
    monkeypatch.setattr(folders, "_READ", {})
    name = datasets.register_folder(_shades(tmp_path / "shades", (10, 10, 20))).name
    (x, y), (xv, yv) = search._split(name, None, None, 0.1)  # its last tenth would be class 2's alone
    assert np.bincount(yv).tolist() == [1, 1, 2] and np.bincount(y).tolist() == [9, 9, 18]  # by hand: 4 = 1 + 1 + 2
    shades = lambda images: set(np.round(images[:, 0, 0, 0] * 255).astype(int).tolist())  # noqa: E731
    assert not shades(x) & shades(xv)
    (x, y), (xv, yv) = search._split(name, None, 20, 0.1)  # 20 of 40 drawn class by class: 5 + 5 + 10
    assert np.bincount(np.concatenate([y, yv])).tolist() == [5, 5, 10] and len(yv) == 2
    assert search._project("EffCapsNet", name).startswith("EffCapsNet-shades-")  # no path separators


def test_tune_command_searches_a_folder_of_images_with_the_generic_recipe(tmp_path, monkeypatch, capsys):
    from keras_capsules import cli
    from keras_capsules.datasets import folders, registry

    monkeypatch.setattr(registry, "_DATASETS", dict(registry._DATASETS))
    monkeypatch.setattr(folders, "_READ", {})
    data = _shades(tmp_path / "shades", (8, 8))
    arguments = ["tune", "EffCapsNet", "--data-dir", str(data), "--max-trials", "1", "--routers", "dynamic"]
    assert cli.main(arguments + ["--output", str(tmp_path / "t"), "--quiet", "--batch-size", "8"]) == 0
    assert "best validation accuracy" in capsys.readouterr().out
    (project,) = (tmp_path / "t").iterdir()
    assert project.name.startswith("EffCapsNet-shades-") and (project / "best_hyperparameters.json").is_file()
    assert cli.main(arguments + ["--dataset", "mnist_sample", "--channels", "1"]) == 2
    assert "tune: --image-size and --channels expected --data-dir FOLDER" in capsys.readouterr().err
