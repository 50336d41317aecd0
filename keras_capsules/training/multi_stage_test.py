"""Multi-stage recipes through ``train()``: GLOM's two stages, killed in stage 2 and resumed there; stage plumbing."""

import hashlib
import json
import os
import signal

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import recipes
from keras_capsules.datasets.augment import Augmentation, multi_view
from keras_capsules.recipes import Recipe, Stage
from keras_capsules.testing.tiers import large
from keras_capsules.training.resume_test import _run

TINY = {"embedding_dim": 8, "projection_dim": 16, "levels": 1}
DRIVER = f"""
import hashlib, sys, time
import keras, numpy as np
from keras_capsules.training import train

def columns_hash(model):
    digest = hashlib.sha256()
    for weight in model.get_layer("columns").weights:
        digest.update(np.ascontiguousarray(keras.ops.convert_to_numpy(weight)).tobytes())
    return digest.hexdigest()[:16]

class Progress(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch_now = epoch
        self.stage = "pretrain" if self.model.name.endswith("_pretrain") else "classifier"
        print("EPOCH_BEGIN", self.stage, epoch, int(self.model.optimizer.iterations.numpy()), columns_hash(self.model), flush=True)

    def on_train_batch_end(self, batch, logs=None):
        print("BATCH", self.stage, self.epoch_now, batch, flush=True)
        if self.stage == "classifier":
            time.sleep(0.3)  # leave the test time to kill inside the epoch

    def on_epoch_end(self, epoch, logs=None):
        print("EPOCH_END", self.stage, epoch, columns_hash(self.model), flush=True)

train("AgreementGLOM", "mnist_sample", epochs=2, batch_size=8, limit=16, eval_limit=16, output=sys.argv[1], seed=0,
      verbose=0, export=False, model_kwargs={TINY!r}, callbacks=[Progress()])
print("DONE", flush=True)
"""


def _begins(lines):
    return [line.split()[1:] for line in lines if line.startswith("EPOCH_BEGIN")]


def _ends(lines):
    return [line.split()[1:] for line in lines if line.startswith("EPOCH_END")]


@large
def test_glom_two_stages_killed_in_stage_two_resume_in_stage_two(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    output = str(tmp_path / "run")
    steps = 16 // 8

    # Run 1: both pre-training epochs, then killed inside the classifier's first epoch.
    lines, code = _run(str(script), output, kill_at=("classifier", 0, 0))
    assert code == -signal.SIGKILL, lines[-20:]
    begins = _begins(lines)
    assert [b[:3] for b in begins] == [
        ["pretrain", "0", "0"],
        ["pretrain", "1", str(steps)],
        ["classifier", "0", "0"],
    ], begins
    initial, pretrained = begins[0][3], _ends(lines)[-1][2]
    assert _ends(lines)[-1][:2] == ["pretrain", "1"] and pretrained != initial  # stage 1 trained the columns
    assert begins[2][3] == pretrained
    assert sorted(os.listdir(os.path.join(output, "checkpoints")))[-1] == "epoch-0002"

    # Run 2: resumes at the start of stage 2 (fresh optimizer) on the pre-trained columns; killed in its second epoch.
    lines, code = _run(str(script), output, kill_at=("classifier", 1, 0))
    assert code == -signal.SIGKILL, lines[-20:]
    assert _begins(lines) == [["classifier", "0", "0", pretrained], ["classifier", "1", str(steps), pretrained]], lines[
        -20:
    ]
    assert sorted(os.listdir(os.path.join(output, "checkpoints")))[-1] == "epoch-0003"

    # Run 3: resumes inside stage 2 with its optimizer state; the frozen columns never change.
    lines, code = _run(str(script), output)
    assert code == 0 and lines[-1] == "DONE", lines[-20:]
    assert _begins(lines) == [["classifier", "1", str(steps), pretrained]], lines[-20:]
    assert _ends(lines) == [["classifier", "1", pretrained]]
    with open(os.path.join(output, "metrics.json")) as handle:
        metrics = json.load(handle)
    assert (
        metrics["epochs_completed"] == 4
        and metrics["resumed_from_epoch"] == 3
        and metrics["resumed_in_stage"] == "classifier"
    )
    assert metrics["optimizer_iterations_at_start"] == steps and metrics["optimizer_iterations"] == 2 * steps
    assert [len(metrics["history"][k]) for k in ("pretrain_loss", "loss", "accuracy")] == [2, 2, 2]
    assert metrics["stages"] == [{"name": "pretrain", "epochs": 2}, {"name": "classifier", "epochs": 2}]
    with open(os.path.join(output, "checkpoints", "epoch-0004", "state.json")) as handle:
        assert json.load(handle)["stage"] == "classifier"

    # model.keras is the constructor's classifier: same layers, every layer trainable, its weights load into AgreementGLOM.
    from keras_capsules.applications import AgreementGLOM
    from keras_capsules.saving import load_model

    trained = load_model(os.path.join(output, "model.keras"), compile=False)
    fresh = AgreementGLOM(input_shape=(32, 32, 1), classes=10, **TINY)
    # (Input layers are auto-named per process, so they are left out of the comparison.)
    named = lambda model: [layer.name for layer in model.layers if not isinstance(layer, keras.layers.InputLayer)]  # noqa: E731
    assert named(trained) == named(fresh)
    assert all(layer.trainable for layer in trained.layers)
    path = str(tmp_path / "glom.weights.h5")
    trained.save_weights(path)
    loaded = AgreementGLOM(input_shape=(32, 32, 1), classes=10, weights=path, **TINY)
    digest = hashlib.sha256(
        b"".join(np.ascontiguousarray(w.numpy()).tobytes() for w in loaded.get_layer("columns").weights)
    )
    assert digest.hexdigest()[:16] == pretrained


def test_stage_records_are_checked():
    with pytest.raises(ValueError, match=r"field `stages` expected Stage records with distinct names"):
        Recipe("AgreementGLOM", "mnist", stages=(Stage("a"), Stage("a")))
    with pytest.raises(
        ValueError, match=r"the last stage trains the model itself; expected output=None, received 'projection_head'"
    ):
        Recipe("AgreementGLOM", "mnist", stages=(Stage("a"), Stage("b", output="projection_head")))
    with pytest.raises(ValueError, match=r"stage 'a' expected positive integer `epochs`.*views=0"):
        Recipe("AgreementGLOM", "mnist", stages=(Stage("a", views=0), Stage("b")))
    recipe = recipes.get("AgreementGLOM", "fashion_mnist").replace(epochs=3)
    (first, pretrain), (second, classifier) = recipe.stage_recipes()
    assert (first.name, pretrain.epochs, pretrain.loss, pretrain.metrics, pretrain.stages) == (
        "pretrain",
        3,
        "SupervisedContrastiveLoss",
        (),
        (),
    )
    assert (second.name, classifier.epochs, classifier.loss, classifier.metrics) == (
        "classifier",
        3,
        "crossentropy",
        ("accuracy",),
    )
    assert recipes.get("EffCapsNet", "mnist").stage_recipes()[0][1] is recipes.get("EffCapsNet", "mnist")


def test_stage_model_and_trainable_flags_name_bad_layers():
    import keras

    from keras_capsules.training.train import set_stage_trainable, stage_model

    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(3, name="body")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(2, name="head")(hidden))
    frozen = set()
    set_stage_trainable(model, Stage("two", trainable=("head",)), frozen)
    assert frozen == {"body"} and [model.get_layer(n).trainable for n in ("body", "head")] == [False, True]
    set_stage_trainable(model, Stage("three"), frozen)
    assert frozen == set() and model.get_layer("body").trainable
    with pytest.raises(ValueError, match=r"stage 'x' field `trainable` expected layer names of model .*\['nope'\]"):
        set_stage_trainable(model, Stage("x", trainable=("nope",)), frozen)
    recipe = Recipe("EffCapsNet", "mnist", loss="crossentropy")
    with pytest.raises(ValueError, match=r"stage 'x' field `output` expected a layer name .* received 'nope'"):
        stage_model(model, Stage("x", output="nope"), recipe, 1)
    first = stage_model(model, Stage("x", output="body"), recipe, 1)
    assert tuple(first.outputs[0].shape) == (None, 3) and first.get_layer("body") is model.get_layer("body")


def test_multi_view_keeps_an_images_views_adjacent_with_its_label():
    images = np.arange(5 * 2 * 2 * 1, dtype="float32").reshape(5, 2, 2, 1)
    labels = np.array([3, 1, 4, 1, 5], "int32")
    doubled = Augmentation("double", lambda image, seed: image * 2.0)
    data = tf.data.Dataset.from_tensor_slices((images, labels))
    batches = list(multi_view(data, doubled, views=3, batch_size=2).as_numpy_iterator())
    assert [x.shape for x, _ in batches] == [(6, 2, 2, 1), (6, 2, 2, 1), (3, 2, 2, 1)]
    x = np.concatenate([b[0] for b in batches])
    y = np.concatenate([b[1] for b in batches])
    np.testing.assert_array_equal(x, np.repeat(images * 2.0, 3, axis=0))
    np.testing.assert_array_equal(y, np.repeat(labels, 3))
    # Random presets give different views of the same image; the MNIST preset pads 28x28 to 32x32.
    digits = tf.data.Dataset.from_tensor_slices(
        (np.random.default_rng(0).uniform(size=(2, 28, 28, 1)).astype("float32"), labels[:2])
    )
    ((views, _),) = multi_view(digits, "glom_mnist", views=2, batch_size=2).as_numpy_iterator()
    assert views.shape == (4, 32, 32, 1) and not np.array_equal(views[0], views[1])


@large
def test_glom_stages_under_mirrored_strategy_train_the_backbone_then_only_the_head(tmp_path):
    import keras

    from keras_capsules.training import train

    class Weights(keras.callbacks.Callback):
        """Copies of the columns' and H2's weights when each stage starts and ends."""

        def __init__(self):
            super().__init__()
            self.seen = []

        def _copy(self, name):
            layer = next((layer for layer in self.model.layers if layer.name == name), None)
            return None if layer is None else [np.array(keras.ops.convert_to_numpy(w)) for w in layer.weights]

        def on_train_begin(self, logs=None):
            self.seen.append(("begin", self.model.name, self._copy("columns"), self._copy("classification_head")))

        def on_train_end(self, logs=None):
            self.seen.append(("end", self.model.name, self._copy("columns"), self._copy("classification_head")))

    weights = Weights()
    metrics = train(
        "AgreementGLOM",
        "mnist_sample",
        epochs=1,
        batch_size=8,
        limit=16,
        eval_limit=16,
        output=str(tmp_path / "run"),
        verbose=0,
        export=False,
        strategy="mirrored",
        model_kwargs=TINY,
        callbacks=[weights],
    )
    assert (
        metrics["replicas"] == 2
        and metrics["epochs_completed"] == 2
        and np.isfinite(metrics["history"]["pretrain_loss"]).all()
    )
    (_, first, columns0, head0), (_, _, columns1, _), (_, second, columns2, head2), (_, _, columns3, head3) = (
        weights.seen
    )
    assert first.endswith("_pretrain") and head0 is None and not second.endswith("_pretrain")
    assert any(not np.array_equal(a, b) for a, b in zip(columns0, columns1))  # stage 1 trains the columns
    for a, b, c in zip(columns1, columns2, columns3):  # stage 2 starts from them and leaves them alone
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(b, c)
    assert any(not np.array_equal(a, b) for a, b in zip(head2, head3))  # and trains H2


@large
def test_stage_epochs_set_each_stage_from_the_recipe_the_api_and_the_command_line(tmp_path, capsys):
    from keras_capsules import cli

    recipe = recipes.get("AgreementGLOM", "fashion_mnist").replace(epochs=4)
    lengths = [(stage.name, r.epochs) for stage, r in recipe.with_stage_epochs({"pretrain": 20}).stage_recipes()]
    assert lengths == [("pretrain", 20), ("classifier", 4)]  # a stage not named keeps --epochs
    with pytest.raises(
        ValueError,
        match=r"`stage_epochs` expected stage names among \['pretrain', 'classifier'\], received \['head'\]\.",
    ):
        recipe.with_stage_epochs({"head": 2})
    with pytest.raises(ValueError, match=r"received \['train'\] \(a single-stage recipe: use `epochs`\)\."):
        recipes.get("EffCapsNet", "mnist").with_stage_epochs({"train": 2})
    with pytest.raises(ValueError, match=r"stage 'classifier' expected positive integer `epochs`.*received epochs=0"):
        recipe.with_stage_epochs({"classifier": 0})

    tiny = [arg for key, value in TINY.items() for arg in ("--model-arg", f"{key}={value}")]
    common = [
        "train",
        "AgreementGLOM",
        "--batch-size",
        "8",
        "--limit",
        "16",
        "--eval-limit",
        "16",
        "--no-export",
        "--quiet",
        *tiny,
    ]
    out = tmp_path / "run"
    assert cli.main([*common, "--stage-epochs", "pretrain=1", "classifier=2", "--output", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["stages"] == [{"name": "pretrain", "epochs": 1}, {"name": "classifier", "epochs": 2}]
    assert (
        metrics["epochs_completed"] == 3
        and len(metrics["history"]["pretrain_loss"]) == 1
        and len(metrics["history"]["val_accuracy"]) == 2
    )
    times = metrics["history"]["pretrain_epoch_seconds"] + metrics["history"]["epoch_seconds"]
    assert len(times) == 3 and metrics["train_seconds"] == round(sum(times), 2)  # both stages' epochs
    capsys.readouterr()
    assert cli.main([*common, "--stage-epochs", "head=2", "--output", str(tmp_path / "bad")]) == 2
    assert (
        "`stage_epochs` expected stage names among ['pretrain', 'classifier'], received ['head']"
        in capsys.readouterr().err
    )
