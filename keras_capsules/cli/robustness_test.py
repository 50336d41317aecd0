"""``keras-capsules robustness``: a preset's accuracy per transform magnitude, printed and written as JSON."""

import json

from keras_capsules import cli


def test_robustness_command_prints_the_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert (
        cli.main(
            [
                "robustness",
                "effcapsnet/MNIST",
                "--dataset",
                "mnist_sample",
                "--limit",
                "16",
                "--transform",
                "scale",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    record = json.loads(out.read_text())
    assert (record["model"], record["examples"], list(record["table"])) == ("EffCapsNet/mnist", 16, ["scale"])
    # Every magnitude of the table is printed, with its accuracy as a multiple of 1/16.
    for magnitude, accuracy in record["table"]["scale"]:
        assert abs(accuracy * 16 - round(accuracy * 16)) < 1e-6
    assert "scale" in printed and len(record["table"]["scale"]) == 5


def test_robustness_attack_prints_accuracy_per_epsilon_with_the_recipes_loss(tmp_path, capsys):
    out = tmp_path / "fgsm.json"
    arguments = ["robustness", "EffCapsNet/mnist", "--dataset", "mnist_sample", "--limit", "16", "--attack", "fgsm"]
    assert cli.main(arguments + ["--epsilons", "0", "0.3", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    record = json.loads(out.read_text())
    assert (record["model"], record["attack"], record["examples"], record["dataset"]) == (
        "EffCapsNet/mnist",
        "fgsm",
        16,
        "mnist_sample",
    )
    assert (record["loss"], record["loss_source"]) == ("margin", "recipe EffCapsNet/mnist/default")
    assert [e for e, _ in record["table"]] == [0.0, 0.3]
    assert record["table"][0][1] == record["accuracy"]  # epsilon 0 leaves the images as they are
    assert "loss attacked: margin (recipe EffCapsNet/mnist/default)" in printed and "0.3" in printed


def _linear_file(tmp_path, recipe):
    """A 10-class linear model on 28x28x1 images, saved with a metrics.json holding ``recipe`` (or none)."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Flatten(), keras.layers.Dense(10)])
    model.save(tmp_path / "model.keras")
    if recipe is not None:
        (tmp_path / "metrics.json").write_text(json.dumps({"dataset": "mnist_sample", "recipe": recipe}))
    return model, str(tmp_path / "model.keras")


def test_robustness_attack_reads_a_files_training_loss_and_runs_pgd(tmp_path, capsys):
    import numpy as np

    from keras_capsules import datasets

    recipe = {
        "model": "BaselineCNN",
        "dataset": "mnist_sample",
        "loss": "crossentropy",
        "loss_kwargs": {},
        "stages": [],
    }
    model, path = _linear_file(tmp_path, recipe)
    out = tmp_path / "pgd.json"
    arguments = ["robustness", path, "--limit", "16", "--attack", "pgd", "--pgd-steps", "2", "--epsilons", "0", "0.2"]
    assert cli.main(arguments + ["--json", str(out)]) == 0
    record = json.loads(out.read_text())
    images, labels = datasets.load_arrays("mnist_sample", "test")
    clean = np.mean(np.argmax(model.predict(images[:16] / 255.0, verbose=0), axis=1) == labels[:16])
    assert record["accuracy"] == record["table"][0][1] == clean
    assert record["table"][1][1] <= clean and (record["steps"], record["random_start"]) == (2, True)
    assert (record["loss"], record["loss_source"]) == ("cross_entropy (from logits)", "metrics.json beside the model")
    assert "cross_entropy (from logits)" in capsys.readouterr().out
    # --cumulative: an image counts at 0.2 only if it was also correct at 0 (clean), under the same attack
    assert cli.main(arguments + ["--cumulative", "--json", str(out)]) == 0
    cumulative = json.loads(out.read_text())
    assert cumulative["cumulative"] and not record["cumulative"] and cumulative["table"][0][1] == clean
    assert cumulative["table"][1][1] <= min(clean, record["table"][1][1])
    assert "cumulative over epsilons" in capsys.readouterr().out


def test_robustness_attack_errors_name_the_options(tmp_path, capsys):
    _, path = _linear_file(tmp_path, None)
    base = ["robustness", path, "--limit", "4", "--attack"]
    assert cli.main(base + ["pgd"]) != 0  # no metrics.json, not compiled: no loss to read
    assert "argument `loss` expected" in capsys.readouterr().err
    assert cli.main(base + ["fgsm", "--pgd-steps", "3"]) != 0
    assert "with --attack fgsm, --pgd-steps do not apply" in capsys.readouterr().err
    assert cli.main(base + ["pgd", "--loss", "cross_entropy", "--epsilons", "-0.1"]) != 0
    assert "argument `epsilon` expected a non-negative number" in capsys.readouterr().err
    assert cli.main(["robustness", path, "--limit", "4", "--epsilons", "0.1", "--cumulative"]) != 0
    assert "--epsilons, --cumulative apply to an attack only" in capsys.readouterr().err


def test_robustness_attack_out_of_memory_is_one_line_naming_batch_size(monkeypatch, capsys):
    import tensorflow as tf

    from keras_capsules.evaluation import adversarial

    def exhausted(*arguments):
        def gradient(images, labels):
            raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor with shape[8,...]")

        return gradient, None

    monkeypatch.setattr(adversarial, "_loss_gradient", exhausted)
    arguments = ["robustness", "EffCapsNet/mnist", "--dataset", "mnist_sample", "--limit", "16", "--attack", "pgd"]
    assert cli.main(arguments + ["--batch-size", "8"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert error == [
        "keras-capsules robustness: error: adversarial_accuracy: out of memory computing the loss gradient of 8 images at "
        "once (the backward pass keeps every layer's activations of the batch); --batch-size expected fewer images per "
        "gradient call, received 8."
    ]


def test_a_folder_is_labelled_as_the_models_classes_and_foreign_class_names_are_refused(tmp_path, capsys):
    """A preset names its classes ('0'-'9'); a folder holding some of them ('3', '7', '9': the folder's own labels
    0, 1, 2) is scored against the digits they are, and folders named otherwise ('three') are an error."""
    import shutil

    import numpy as np
    from PIL import Image

    from keras_capsules import datasets, presets

    images, labels = datasets.load_arrays("mnist_sample", "test")
    chosen = np.flatnonzero(np.isin(labels, [3, 7, 9]))[:12]
    for index in chosen:
        folder = tmp_path / "digits" / str(labels[index])
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(images[index, :, :, 0]).save(folder / f"{index}.png")
    model = presets.open_model("EffCapsNet/mnist")[0]
    predicted = np.argmax(model.predict(images[chosen] / 255.0, verbose=0), axis=1)
    expected = np.mean(predicted == labels[chosen])  # NumPy: the preset's classes against the true digits
    out = tmp_path / "r.json"
    arguments = ["robustness", "EffCapsNet/mnist", "--data-dir", str(tmp_path / "digits"), "--transform", "scale"]
    assert cli.main(arguments + ["--json", str(out)]) == 0
    record = json.loads(out.read_text())
    scale = dict(record["table"]["scale"])
    assert scale[1.0] == expected and expected > 0.5 and record["model"] == "EffCapsNet/mnist"
    shutil.copytree(tmp_path / "digits", tmp_path / "named")
    (tmp_path / "named" / "3").rename(tmp_path / "named" / "three")
    capsys.readouterr()
    assert cli.main(arguments[:2] + ["--data-dir", str(tmp_path / "named"), "--transform", "scale"]) == 2
    assert "expected the model's class names ['0', '1', '2'" in capsys.readouterr().err
