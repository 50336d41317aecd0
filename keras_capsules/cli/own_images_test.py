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

from keras_capsules import cli
from keras_capsules.datasets import folders, registry


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
    script = (
        "import resource, sys\nfrom keras_capsules import cli\ncode = cli.main(sys.argv[1:])\n"
        "print('MAXRSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\nsys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith(
        "keras-capsules train: error: memory_plan.check: training model 'eff_capsnet' on 768x1024x3"
    )
    assert "more than the limit of 2 GB" in error and "No batch fits, not even 1" in error
    # EffCapsNet's class capsules alone are 1.15e9 float32 weights (4.6 GB) at this size: the process stayed far below.
    peak_kb = int(done.stdout.split("MAXRSS_KB")[1].split()[0])
    assert peak_kb < 2_000_000, peak_kb
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
