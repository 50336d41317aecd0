"""Model files: atomic ``.keras`` saves, clear errors for missing, truncated or foreign files."""

import os
import subprocess
import sys
import textwrap
import zipfile

import keras
import numpy as np
import pytest

from keras_capsules import applications
from keras_capsules.saving import ModelFileError, load_model, load_weights_file, save_model
from keras_capsules.testing.tiers import large

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _model():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    return model


def test_save_replaces_atomically_and_loads(tmp_path):
    path = str(tmp_path / "model.keras")
    first, second = _model(), _model()
    save_model(first, path)
    save_model(second, path)
    assert os.listdir(tmp_path) == ["model.keras"]  # no temporary file left behind
    x = np.ones((1, 4), "float32")
    np.testing.assert_array_equal(load_model(path).predict(x, verbose=0), second.predict(x, verbose=0))
    with pytest.raises(ValueError, match=r"save_model: argument `path` expected a file name ending in '\.keras'"):
        save_model(first, str(tmp_path / "model.h5"))


def test_missing_truncated_and_foreign_files(tmp_path):
    with pytest.raises(ModelFileError, match=r"load_model: no such file"):
        load_model(str(tmp_path / "absent.keras"))
    path = tmp_path / "model.keras"
    save_model(_model(), str(path))
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ModelFileError, match=r"model\.keras.*(truncated or corrupt)"):
        load_model(str(path))
    other = tmp_path / "notes.keras"
    other.write_text("hello")
    with pytest.raises(ModelFileError, match=r"notes\.keras' is not a \.keras archive"):
        load_model(str(other))


def _rewrite_archive(source, target, change):
    """Copies the ``.keras`` zip ``source`` to ``target`` with ``change(name, data)`` applied (``None`` drops the member)."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as copy:
        for name in original.namelist():
            data = change(name, original.read(name))
            if data is not None:
                copy.writestr(name, data)


def test_archives_with_a_truncated_config_or_no_weights(tmp_path):
    good = str(tmp_path / "good.keras")
    save_model(_model(), good)
    _rewrite_archive(
        good, tmp_path / "cut.keras", lambda name, data: data[: len(data) // 2] if name == "config.json" else data
    )
    with pytest.raises(
        ModelFileError, match=r"load_model: '.*cut\.keras' is truncated or corrupt \(its config\.json is not valid JSON"
    ):
        load_model(str(tmp_path / "cut.keras"))
    _rewrite_archive(good, tmp_path / "bare.keras", lambda name, data: None if name.endswith(".h5") else data)
    with pytest.raises(ModelFileError, match=r"load_model: '.*bare\.keras'"):
        load_model(str(tmp_path / "bare.keras"))


def test_load_weights_file_names_bad_files(tmp_path):
    source, target = _model(), _model()
    weights = str(tmp_path / "w.weights.h5")
    source.save_weights(weights)
    x = np.ones((1, 4), "float32")
    load_weights_file(target, weights)
    np.testing.assert_array_equal(target.predict(x, verbose=0), source.predict(x, verbose=0))
    cut = tmp_path / "cut.weights.h5"
    cut.write_bytes(open(weights, "rb").read()[:200])
    with pytest.raises(
        ModelFileError, match=r"load_weights: '.*cut\.weights\.h5' could not be loaded into .*truncated, corrupt"
    ):
        load_weights_file(target, str(cut))
    with pytest.raises(ModelFileError, match=r"load_weights: no such file '.*absent\.weights\.h5'"):
        load_weights_file(target, str(tmp_path / "absent.weights.h5"))
    wider = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    with pytest.raises(ModelFileError, match=r"w\.weights\.h5' could not be loaded .*made for another model"):
        load_weights_file(wider, weights)
    with pytest.raises(TypeError, match=r"load_weights: argument `path` expected a file path"):
        load_weights_file(target, 3)


@large
def test_a_fresh_process_that_imports_only_saving_loads_a_library_model(tmp_path):
    """The library's classes are found without importing the applications by hand (or through ``training``)."""
    keras.utils.set_random_seed(0)
    model = applications.CapsNet(input_shape=(20, 20, 1), classes=3)  # PrimaryCaps, FcCaps, dynamic routing, a decoder
    x = np.random.default_rng(0).uniform(size=(2, 20, 20, 1)).astype("float32")
    save_model(model, str(tmp_path / "capsnet.keras"))
    np.savez(tmp_path / "io.npz", x=x, expected=model.predict(x, verbose=0))
    child = textwrap.dedent(
        """
        import sys
        import numpy as np
        from keras_capsules import saving

        data = np.load(sys.argv[1] + "/io.npz")
        model = saving.load_model(sys.argv[1] + "/capsnet.keras")
        np.testing.assert_array_equal(model.predict(data["x"], verbose=0), data["expected"])
        print(type(model).__name__, "training" if "keras_capsules.training" in sys.modules else "no training")
        """
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", child, str(tmp_path)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["CapsuleClassifier", "no", "training"]
