"""``keras-capsules train`` / ``predict`` on a user's own folder of images: the cases a first user meets.

Large photos (a reduced default size, a refusal before any weight is allocated), two folders of one
name, classes that lose their images, symlinked files, and the smaller messages. Folders are written
here with Pillow; expected sizes, counts and names are hand-derived.
"""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from keras_capsules import cli, datasets
from keras_capsules.datasets import folders, registry

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    """Folders read and registered in a test are forgotten after it."""
    monkeypatch.setattr(registry, "_DATASETS", dict(registry._DATASETS))
    monkeypatch.setattr(folders, "_READ", {})


def _new_process(monkeypatch):
    """As a new ``keras-capsules`` process finds things: no folder read or registered."""
    monkeypatch.setattr(
        registry, "_DATASETS", {k: v for k, v in registry._DATASETS.items() if not k.startswith("folder:")}
    )
    monkeypatch.setattr(folders, "_READ", {})


def _photo(path, height, width, value=0, format=None):
    """A smooth ``height`` x ``width`` RGB image (a small JPEG even when large) at ``path``."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rows = np.linspace(0, 255, height, dtype=np.float32)[:, None]
    cols = np.linspace(0, 255, width, dtype=np.float32)[None, :]
    image = np.stack([rows + 0 * cols, 0 * rows + cols, np.full((height, width), value, np.float32)], axis=-1)
    Image.fromarray(image.astype(np.uint8)).save(path, format=format, quality=60)
    return path


def _folder(root, classes=("cat", "dog"), per_class=4, size=(8, 8), extension="png"):
    for c, name in enumerate(classes):
        for i in range(per_class):
            _photo(str(root / name / f"{i}.{extension}"), *size, value=40 * c + i)
    return root


# ------------------------------------------------------------------------ 1. large photos


def test_large_photos_get_a_reduced_default_size_and_a_plan(tmp_path, capsys):
    data = _folder(tmp_path / "photos", per_class=2, size=(768, 1024), extension="jpg")
    code = cli.main(["train", "EffCapsNet", "--data-dir", str(data), "--dry-run", "--output", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code == 0, out
    # 128 px on the longer side, aspect ratio kept: 768 * 128 / 1024 = 96.
    assert "size 96x128: the most common size 768x1024 (4 of 4 images) scaled down to a longer side of 128 px" in out
    assert "4 image(s) resized to it" in out
    assert "Training plan: model 'eff_capsnet' on 96x128x3 inputs at batch" in out
    assert not (tmp_path / "o").exists()


def test_a_model_too_large_for_memory_is_refused_before_it_is_built(tmp_path):
    data = _folder(tmp_path / "photos", per_class=2, size=(768, 1024), extension="jpg")
    argv = ["train", "EffCapsNet", "--data-dir", str(data), "--image-size", "768", "1024", "--max-memory", "2GB"]
    argv += ["--output", str(tmp_path / "o")]
    # The child records the largest weight a layer made with values (a plan from shapes makes weights with shapes
    # and no values): EffCapsNet's class capsules alone are 1.15e9 float32 weights at this size.
    script = (
        "import math, sys\nimport keras\nfrom keras_capsules import cli\n"
        "from keras_capsules.export._private_api import is_deferred\nlargest = [0]\n"
        "add_weight = keras.layers.Layer.add_weight\n"
        "def recorded(self, *args, **kwargs):\n"
        "    variable = add_weight(self, *args, **kwargs)\n"
        "    if not is_deferred(variable):\n"
        "        largest[0] = max(largest[0], math.prod(variable.shape))\n"
        "    return variable\n"
        "keras.layers.Layer.add_weight = recorded\ncode = cli.main(sys.argv[1:])\nprint('LARGEST', largest[0])\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith(
        "keras-capsules train: error: memory_plan.check: training model 'eff_capsnet' on 768x1024x3"
    )
    assert "more than the limit of 2 GB" in error and "No batch fits, not even 1" in error
    # Refused before any weight of the class capsules' size had values (the process's peak memory is no test of
    # it: 0.8 GB alone on 2-core hosts, but 4.6 GB once in the parallel --run-large suite).
    largest = int(done.stdout.split("LARGEST")[1].split()[0])
    assert largest < 1_150_000_000 // 100, largest
    assert not (tmp_path / "o" / "checkpoints").exists()


# ------------------------------------------------------------------- 2. two folders, one name


def test_two_folders_of_one_name_get_their_own_runs_and_never_share_one(tmp_path, monkeypatch, capsys, small_training):
    monkeypatch.chdir(tmp_path)
    project_a = _folder(tmp_path / "projA" / "data", classes=("cat", "dog"), size=(28, 28))
    project_b = _folder(tmp_path / "projB" / "data", classes=("ant", "bee", "cow"), size=(28, 28))
    for data in (project_a, project_b):
        assert cli.main(["train", "EffCapsNet", "--data-dir", str(data), *small_training]) == 0
    capsys.readouterr()
    runs = {
        data: f"runs/EffCapsNet-data-{hashlib.sha256(str(data).encode()).hexdigest()[:8]}"
        for data in (project_a, project_b)
    }
    assert sorted(os.listdir("runs")) == sorted(os.path.basename(run) for run in runs.values())
    for data, classes in ((project_a, ["cat", "dog"]), (project_b, ["ant", "bee", "cow"])):
        with open(os.path.join(runs[data], "dataset.json")) as handle:
            recorded = json.load(handle)
        assert recorded["folder"] == str(data) and recorded["class_names"] == classes
        assert recorded["fingerprint"]["files"] == 4 * len(classes)
    # One --output for both: the second folder is refused, naming both, even for a dry run; --no-resume starts over.
    shared = runs[project_a]
    for extra in ([], ["--dry-run"]):
        code = cli.main(
            ["train", "EffCapsNet", "--data-dir", str(project_b), "--output", shared, *small_training, *extra]
        )
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert f"holds a run of the folder {project_a} (2 classes, 8 images" in err
        assert f"while this run reads the folder {project_b} (3 classes, 12 images" in err
        assert f"the default for this data is {runs[project_b]}" in err and "--no-resume" in err
    with open(os.path.join(shared, "dataset.json")) as handle:
        assert json.load(handle)["folder"] == str(project_a)  # nothing of projA's run was replaced
    # The same folder with one image more is other images too.
    _photo(str(project_a / "cat" / "extra.png"), 28, 28)
    _new_process(monkeypatch)
    assert cli.main(["train", "EffCapsNet", "--data-dir", str(project_a), *small_training]) == 2
    assert "(2 classes, 9 images" in capsys.readouterr().err


# --------------------------------------------------------- 3. WebP, and classes that lose their images


def test_webp_is_read_and_a_class_without_readable_images_is_an_error_unless_dropped(tmp_path, capsys):
    data = _folder(tmp_path / "pets", classes=("cat",), size=(28, 28))
    dogs = [RNG.integers(0, 256, (28, 28, 3), dtype=np.uint8) for _ in range(3)]
    for i, dog in enumerate(dogs):
        (data / "dog").mkdir(exist_ok=True)
        Image.fromarray(dog).save(data / "dog" / f"{i}.webp", lossless=True)
    (data / "fox").mkdir()
    for i in range(2):
        (data / "fox" / f"{i}.png").write_bytes(b"\x89PNG truncated")
    argv = ["train", "EffCapsNet", "--data-dir", str(data), "--dry-run", "--output", str(tmp_path / "o")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none of the 2 image files of 'fox' decodes (e.g. fox/0.png)" in err, err
    assert "--drop-empty-classes" in err and "'dog'" not in err
    assert cli.main([*argv, "--drop-empty-classes"]) == 0
    out = capsys.readouterr().out
    assert "2 classes ['cat', 'dog']" in out and "images: train 7" in out  # 4 PNG cats, 3 WebP dogs
    assert "warning: skipped the class folders without a readable training image ['fox']" in out
    images, labels = datasets.load_arrays(f"folder:{data}@drop-empty")
    np.testing.assert_array_equal(images[labels == 1], np.stack(dogs))  # lossless WebP: the pixels written


# ------------------------------------------------------------------------------- 4. symlinks


def _constants(root, name, values):
    for value in values:
        _save_constant(root / name / f"{value}.png", value)


def _save_constant(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.fromarray(np.full((28, 28), value, np.uint8)).save(path)


def test_a_file_linked_from_two_places_is_read_once_never_with_two_labels(tmp_path, capsys):
    data = tmp_path / "pets"
    _constants(data, "cat", [10, 11, 12, 13])
    _constants(data, "dog", [20, 21, 22, 23])
    os.symlink(data / "cat" / "10.png", data / "dog" / "link.png")  # one file, two labels: left out of both
    os.symlink(data / "cat" / "11.png", data / "cat" / "again.png")  # one file twice in one class: read once
    assert cli.main(["train", "EffCapsNet", "--data-dir", str(data), "--dry-run", "--output", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "images: train 7" in out  # cat 11, 12, 13 (10 has two labels, again.png is 11); dog 20-23
    assert "warning: skipped 1 files reached twice in one class through symlinks, read once: cat/again.png" in out
    assert (
        "warning: skipped 2 files reached from two classes through symlinks (two labels), left out of both: "
        "cat/10.png, dog/link.png" in out
    )
    images, labels = datasets.load_arrays(f"folder:{data}")
    pairs = sorted(zip(images[:, 0, 0, 0].tolist(), labels.tolist()))
    assert pairs == [(11, 0), (12, 0), (13, 0), (20, 1), (21, 1), (22, 1), (23, 1)]  # each real file once


def test_a_training_file_linked_into_test_is_left_out_of_test(tmp_path, capsys):
    data = tmp_path / "pets"
    _constants(data / "train", "cat", [10, 11])
    _constants(data / "train", "dog", [20, 21])
    _constants(data / "test", "cat", [30])
    _constants(data / "test", "dog", [40])
    os.symlink(data / "train" / "cat" / "10.png", data / "test" / "cat" / "leak.png")
    assert cli.main(["train", "EffCapsNet", "--data-dir", str(data), "--dry-run", "--output", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "images: train 4, test 2" in out
    assert (
        "warning: skipped 1 test/ files that are also in train/ through symlinks, left out of test/: test/cat/leak.png"
        in out
    )
    images, _ = datasets.load_arrays(f"folder:{data}", "test")
    assert sorted(images[:, 0, 0, 0].tolist()) == [30, 40]


def test_a_class_folder_linked_as_another_is_an_error_naming_both(tmp_path, capsys):
    data = tmp_path / "pets"
    _constants(data, "cat", [10, 11])
    _constants(data, "dog", [20, 21])
    os.symlink(data / "cat", data / "kitty")
    assert cli.main(["train", "EffCapsNet", "--data-dir", str(data), "--dry-run", "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "'cat' holds no image file" in err and "'kitty' holds no image file" in err
    assert "4 files reached from two classes through symlinks were left out of both (e.g. cat/10.png, cat/11.png" in err


# ------------------------------------------------------------------------------- 5. smaller


def test_quiet_keeps_the_plan_the_epoch_line_and_names_a_class_without_validation_image(
    tmp_path, capsys, small_training
):
    data = tmp_path / "pets"
    _constants(data, "cat", list(range(10, 20)))
    _constants(data, "dog", [50])  # one image: the hold-out (11 // 10 = 1 image) cannot take it
    preset = tmp_path / "pets-preset"
    argv = ["train", "EffCapsNet", "--data-dir", str(data), "--output", str(tmp_path / "run"), *small_training]
    assert "--quiet" in argv
    assert cli.main([*argv, "--save-preset", str(preset)]) == 0
    out = capsys.readouterr().out
    assert "warning: the validation hold-out (1 images) has no image of the class(es) 'dog' (1 image)" in out
    assert "Training plan: model 'eff_capsnet' on 28x28x1 inputs at batch 16" in out
    assert "estimated peak memory:" in out and "val_accuracy: " in out  # Keras's one line per epoch
    # --weights takes the preset folder --save-preset wrote: its backbone, new class capsules.
    assert cli.main([*argv[:-2], "--dry-run", "--output", str(tmp_path / "tuned"), "--weights", str(preset)]) == 0
    from keras_capsules import presets
    from keras_capsules.applications.fine_tune import fine_tune_model

    tuned = fine_tune_model("EffCapsNet", str(preset), (28, 28, 1), 3, reconstruction=False)
    source = presets.load(str(preset))
    assert tuned.preset == str(preset) and "class_caps" in tuned.top
    np.testing.assert_array_equal(
        tuned.model.get_layer("conv1").kernel.numpy(), source.get_layer("conv1").kernel.numpy()
    )


def test_a_model_trained_on_a_folder_is_evaluated_and_explained_on_it_by_default(
    tmp_path, monkeypatch, capsys, small_training
):
    data = tmp_path / "shades"
    _constants(data, "dark", [10, 20, 30, 40])
    _constants(data, "light", [200, 210, 220, 230])
    run, preset = tmp_path / "run", tmp_path / "shades-preset"
    argv = ["train", "EffCapsNet", "--data-dir", str(data), "--output", str(run), "--save-preset", str(preset)]
    assert cli.main([*argv, *small_training]) == 0
    _new_process(monkeypatch)  # a later command: no folder read or registered
    capsys.readouterr()
    assert cli.main(["evaluate", str(run / "model.keras")]) == 0
    out = capsys.readouterr().out
    assert f"was trained on the folder {data}: reading it" in out and "has no test/ split" in out
    report = json.loads(out[out.index("{") :])
    import keras

    model = keras.saving.load_model(run / "model.keras", compile=False)
    values = np.array([10, 20, 30, 40, 200, 210, 220, 230], np.float32)
    images = np.broadcast_to(values[:, None, None, None] / 255, (8, 28, 28, 1))
    expected = np.mean(np.argmax(model.predict(images, verbose=0), axis=1) == [0, 0, 0, 0, 1, 1, 1, 1])
    assert report["dataset"] == f"folder:{data}@28x28@1ch" and report["accuracy"] == pytest.approx(expected)
    # Its preset folder too: the run record it keeps names the folder (not the embedded MNIST sample).
    assert cli.main(["evaluate", str(preset)]) == 0
    out = capsys.readouterr().out
    from_preset = json.loads(out[out.index("{") :])
    assert from_preset["dataset"] == report["dataset"] and from_preset["accuracy"] == pytest.approx(expected)
    assert cli.main(["explain", str(run / "model.keras"), "--num-images", "0", "--output", str(tmp_path / "x")]) == 0
    assert f"on folder:{data}@28x28@1ch (train, 8 images" in capsys.readouterr().out
    data.rename(tmp_path / "moved")
    _new_process(monkeypatch)
    assert cli.main(["evaluate", str(run / "model.keras")]) == 2
    assert f"was trained on the folder of images {data} (its metrics.json says), which is not there any more" in (
        capsys.readouterr().err
    )


def test_an_unreadable_image_is_named_and_the_others_are_answered(tmp_path, capsys):
    import keras

    inputs = keras.Input((8, 8, 1))
    model = keras.Model(inputs, keras.layers.Dense(2, activation="softmax")(keras.layers.Flatten()(inputs)))
    model.save(tmp_path / "m.keras")
    good = _photo(str(tmp_path / "good.png"), 8, 8)
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"\xff\xd8\xff not a whole jpeg")
    assert cli.main(["predict", str(tmp_path / "m.keras"), str(bad), good]) == 2
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == good and len(captured.out.splitlines()) == 3  # its two classes
    lines = [line for line in captured.err.splitlines() if "error" in line]
    assert lines == [
        f"keras-capsules predict: error: predict: {str(bad)!r} is not a readable JPG image: it does not decode (corrupt, "
        "truncated, or another format under that extension)."
    ]


def test_image_size_and_output_errors_name_their_option(tmp_path, capsys):
    data = _folder(tmp_path / "pets", size=(28, 28))
    with pytest.raises(SystemExit):
        cli.main(["train", "EffCapsNet", "--data-dir", str(data), "--image-size", "0", "0", "--dry-run"])
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == "keras-capsules train: error: argument --image-size: expected an integer >= 1, received '0'"
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert cli.main(["train", "EffCapsNet", "--data-dir", str(data), "--output", str(blocker / "run")]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"keras-capsules train: error: train: argument `output` (CLI --output) expected a folder it can create and write "
        f"into, received {str(blocker / 'run')!r}: {str(blocker)!r} is a file, not a folder (nothing was written).\n"
    )
