"""The preset machinery: file format, lookup order, hash checks, argument rules, download through a local server."""

import dataclasses
import functools
import hashlib
import http.server
import os
import re
import shutil
import threading

import keras
import numpy as np
import pytest

from keras_capsules import applications, metrics, presets
from keras_capsules.presets import registry, weights_file
from keras_capsules.testing.tiers import large


@pytest.fixture(scope="module")
def source_model():
    """An EffCapsNet with decoder whose weights are distinct random values (what a preset file must restore)."""
    model = applications.EffCapsNet(reconstruction=True)
    rng = np.random.default_rng(7)
    for variable in model.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32"))
    return model


@pytest.fixture
def preset(tmp_path, monkeypatch, source_model):
    """A preset 'test' of EffCapsNet whose file lives in $KERAS_CAPSULES_PRESETS."""
    folder = tmp_path / "presets"
    digest = presets.save_weights(source_model, str(folder / "effcapsnet-test.npz"))
    monkeypatch.setenv("KERAS_CAPSULES_PRESETS", str(folder))
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    record = presets.Preset(
        model="EffCapsNet",
        name="test",
        dataset="mnist",
        kwargs={"variant": "mnist", "reconstruction": True, "classes": 10, "input_shape": [28, 28, 1]},
        file="effcapsnet-test.npz",
        sha256=digest,
        test_accuracy=0.5,
        test_examples=10000,
        subset_accuracy=0.5,
        subset={"dataset": "mnist_sample", "split": "test", "limit": 1000},
        parameters=source_model.count_params(),
        recipe=("EffCapsNet", "mnist", "default"),
        command="keras-capsules train EffCapsNet --dataset mnist",
        epochs=1,
        train_seconds=1.0,
        hardware="test",
        library_version="0",
        date="2026-01-01",
    )
    presets.register_preset(record)
    yield record
    presets.unregister_preset("EffCapsNet", "test")


def _by_name(model):
    return {name: [np.asarray(w) for w in layer.weights] for name, layer in weights_file.weighted_layers(model).items()}


def test_preset_restores_every_weight_and_fixes_the_arguments(preset, source_model):
    model = applications.EffCapsNet(weights="test")  # reconstruction=True comes from the preset
    assert "decoder" in _by_name(model)
    expected, loaded = _by_name(source_model), _by_name(model)
    assert sorted(loaded) == sorted(expected)
    for name in expected:
        for a, b in zip(expected[name], loaded[name]):
            np.testing.assert_array_equal(a, b)
    x = np.random.default_rng(0).uniform(size=(3, 28, 28, 1)).astype("float32")
    np.testing.assert_allclose(model.predict(x, verbose=0), source_model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    # the classes named as its dataset's (MNIST's digits), as a preset folder's model names its own
    assert model.class_names == tuple(str(digit) for digit in range(10)) == presets.class_names_of(model)


def test_float16_storage_halves_the_file_and_rounds_like_float16(tmp_path, source_model):
    full = tmp_path / "full.npz"
    half = tmp_path / "half.npz"
    presets.save_weights(source_model, str(full))
    presets.save_weights(source_model, str(half), dtype="float16")
    assert os.path.getsize(half) < 0.6 * os.path.getsize(full)
    target = applications.EffCapsNet(reconstruction=True)
    presets.load_weights(target, str(half))
    kernel = weights_file.weighted_layers(source_model)["class_caps"].weights[0]
    loaded = weights_file.weighted_layers(target)["class_caps"].weights[0]
    np.testing.assert_array_equal(np.asarray(loaded), np.asarray(kernel).astype("float16").astype("float32"))


def test_backbone_and_no_decoder_load_the_layers_they_keep(preset, source_model):
    backbone = applications.EffCapsNet(weights="test", include_top=False)
    assert backbone.class_names is None  # no class outputs, no class names
    assert set(_by_name(backbone)) == {"conv1", "conv2", "conv3", "conv4", "bn1", "bn2", "bn3", "bn4", "primary_caps"}
    np.testing.assert_array_equal(_by_name(backbone)["conv1"][0], _by_name(source_model)["conv1"][0])
    plain = applications.EffCapsNet(weights="test", reconstruction=False)
    assert "decoder" not in _by_name(plain)
    x = np.random.default_rng(1).uniform(size=(2, 28, 28, 1)).astype("float32")
    np.testing.assert_allclose(plain.predict(x, verbose=0), source_model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)


def test_conflicting_arguments_are_refused(preset):
    with pytest.raises(
        ValueError,
        match=r"EffCapsNet: argument `classes` expected 10 \(fixed by preset weights='test', or include_top=False\), received 5",
    ):
        applications.EffCapsNet(weights="test", classes=5)
    with pytest.raises(ValueError, match=r"argument `input_shape` expected \[28, 28, 1\]"):
        applications.EffCapsNet(weights="test", input_shape=(32, 32, 1))
    with pytest.raises(ValueError, match=r"argument `variant` expected 'mnist'"):
        applications.EffCapsNet(weights="test", variant="multimnist")
    with pytest.raises(ValueError, match=r"argument `router` expected its default None with preset weights='test'"):
        applications.EffCapsNet(weights="test", router="dynamic")
    with pytest.raises(
        ValueError,
        match=r"EffCapsNet: argument `weights` expected None, the path to a weights file, or a preset name \(\[.*'test'.*\]\), received 'nope'",
    ):
        applications.EffCapsNet(weights="nope")
    # include_top=False frees classes and input_shape: the convolutions take larger images.
    backbone = applications.EffCapsNet(weights="test", include_top=False, input_shape=(36, 36, 1), classes=3)
    assert backbone.output_shape[-1] is not None


def test_lookup_order_and_hash_check(preset, tmp_path, monkeypatch):
    folders = registry.search_dirs()
    assert folders[0] == registry.PACKAGE_DIR and folders[1] == os.environ["KERAS_CAPSULES_PRESETS"]
    assert folders[2] == os.path.join(str(tmp_path / "keras_home"), "keras_capsules")
    path = registry.locate(preset)
    assert path == os.path.join(os.environ["KERAS_CAPSULES_PRESETS"], "effcapsnet-test.npz")
    # The Keras cache is searched last: moving the file there still finds it.
    cache = tmp_path / "keras_home" / "keras_capsules"
    cache.mkdir(parents=True)
    shutil.move(path, cache / "effcapsnet-test.npz")
    assert registry.locate(preset) == str(cache / "effcapsnet-test.npz")
    # A changed byte: the SHA-256 check names the file.
    data = bytearray((cache / "effcapsnet-test.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (cache / "effcapsnet-test.npz").write_bytes(bytes(data))
    with pytest.raises(presets.PresetFileError, match=r"effcapsnet-test\.npz' has SHA-256 [0-9a-f]{64}, expected"):
        applications.EffCapsNet(weights="test")
    os.remove(cache / "effcapsnet-test.npz")
    with pytest.raises(presets.PresetFileError, match=r"file 'effcapsnet-test\.npz' not found in"):
        applications.EffCapsNet(weights="test")


def test_corrupt_or_mismatched_files_name_the_file(tmp_path, source_model):
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(presets.PresetFileError, match=r"broken\.npz' is truncated or corrupt"):
        presets.load_weights(applications.EffCapsNet(), str(broken))
    other = tmp_path / "other.npz"
    presets.save_weights(applications.EffCapsNet(variant="multimnist"), str(other))
    with pytest.raises(
        presets.PresetFileError, match=r"other\.npz': weight 0 of layer '(primary_caps|class_caps)' has shape"
    ):
        presets.load_weights(applications.EffCapsNet(), str(other))
    with pytest.raises(presets.PresetFileError, match=r"has no weights for the layers \['decoder'\]"):
        presets.load_weights(applications.EffCapsNet(reconstruction=True), str(other))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_download_only_on_request_through_get_file_with_the_hash(preset, tmp_path, monkeypatch):
    served = tmp_path / "served"
    served.mkdir()
    shutil.move(registry.locate(preset), served / preset.file)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(served)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        remote = dataclasses.replace(preset, url=f"http://127.0.0.1:{server.server_port}/{preset.file}")
        presets.register_preset(remote)
        with pytest.raises(presets.PresetFileError, match=r"keras_capsules\.presets\.download\('EffCapsNet', 'test'\)"):
            applications.EffCapsNet(weights="test")  # never downloads implicitly
        path = presets.download("EffCapsNet", "test")
        assert path == os.path.join(str(tmp_path / "keras_home"), "keras_capsules", preset.file)
        assert hashlib.sha256(open(path, "rb").read()).hexdigest() == preset.sha256
        assert applications.EffCapsNet(weights="test").count_params() == preset.parameters
        # A server that sends other bytes: get_file's hash check refuses them.
        os.remove(path)
        (served / preset.file).write_bytes(b"something else")
        with pytest.raises(ValueError, match=r"(?i)hash|corrupt|incomplete"):
            presets.download("EffCapsNet", "test")
    finally:
        server.shutdown()
        presets.register_preset(preset)


@large
def test_preset_model_saves_reloads_and_exports(preset, tmp_path, source_model):
    model = applications.EffCapsNet(weights="test")
    x = np.random.default_rng(2).uniform(size=(4, 28, 28, 1)).astype("float32")
    expected = source_model.predict(x, verbose=0)
    model.save(tmp_path / "m.keras")
    reloaded = keras.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(reloaded.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-6)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        model.export(str(tmp_path / "export"), verbose=False)
        exported = tf.saved_model.load(str(tmp_path / "export"))  # keep a reference: serve() needs its variables
        served = exported.serve(tf.constant(x))
        np.testing.assert_allclose(np.asarray(served), expected, rtol=1e-5, atol=1e-6)


def test_open_model_opens_a_preset_or_a_keras_file(preset, tmp_path, source_model):
    from keras_capsules import saving
    from keras_capsules.presets import constructor

    x = np.random.default_rng(3).uniform(size=(2, 28, 28, 1)).astype("float32")
    expected = source_model.predict(x, verbose=0)
    model, key = presets.open_model("effcapsnet:TEST")  # any case, either separator
    assert key == ("EffCapsNet", "test")
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-6)
    saving.save_model(source_model, str(tmp_path / "mine.keras"))
    model, key = presets.open_model(str(tmp_path / "mine.keras"))
    assert key is None
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-6)
    assert presets.open_model("EffCapsNet/absent") is None and presets.open_model("nothing") is None
    with pytest.raises(saving.ModelFileError, match=r"load_model: no such file '.*gone\.keras'"):
        presets.open_model(str(tmp_path / "gone.keras"))
    with pytest.raises(
        ValueError,
        match=r"build_preset: argument `model_name` expected a constructor decorated with with_presets .*'EffCapsNet'.*received 'NoNet'",
    ):
        constructor.build_preset("NoNet", "test")


def test_presets_command_lists_cards_and_downloads(preset, capsys):
    from keras_capsules import cli

    assert cli.main(["presets", "EffCapsNet"]) == 0
    out = capsys.readouterr().out
    line = next(row for row in out.splitlines() if "weights='test'" in row)
    assert (
        re.search(r"50\.00 %\s+mnist", line)
        and f"{preset.parameters:,}" in line
        and line.endswith("effcapsnet-test.npz")
    )
    assert cli.main(["presets", "--card", "EffCapsNet/test"]) == 0
    assert "**50.00 %** top-1 accuracy (5,000 of 10,000) on the full official mnist test set" in capsys.readouterr().out
    assert cli.main(["presets", "--download", "EffCapsNet/test"]) == 2
    assert "has no download URL" in capsys.readouterr().err


def test_weights_file_paths_load_and_corrupt_ones_are_named(tmp_path, source_model):
    from keras_capsules.saving import ModelFileError

    npz = tmp_path / "mine.npz"
    presets.save_weights(source_model, str(npz))
    model = applications.EffCapsNet(reconstruction=True, weights=str(npz))  # a preset-format file by path
    np.testing.assert_array_equal(_by_name(model)["class_caps"][0], _by_name(source_model)["class_caps"][0])
    corrupt = tmp_path / "model.weights.h5"
    corrupt.write_bytes(b"\x89HDF\r\n\x1a\n truncated")
    with pytest.raises(ModelFileError, match=r"model\.weights\.h5"):
        applications.EffCapsNet(weights=str(corrupt))
    with pytest.raises(
        FileNotFoundError, match=r"EffCapsNet: argument `weights`: no such weights file '.*absent\.weights\.h5'"
    ):
        applications.EffCapsNet(weights=str(tmp_path / "absent.weights.h5"))


def test_rem_preset_card_counts_its_sparsity_both_ways():
    """The mnist_rem card's figures, counted with NumPy in the shipped file: the prunable kernels (ours), and every
    parameter of the pruning layers with biases and the routing bias (REM's architecture_stat); BatchNorm is in neither."""
    record = presets.get("EffCapsNet", "mnist_rem")
    arrays = weights_file.read_weights(os.path.join(os.path.dirname(presets.__file__), "files", record.file))
    kernels = ["conv1/0", "conv2/0", "conv3/0", "conv4/0", "primary_caps/0", "class_caps/1"]
    in_pruning_layers = [k for k in arrays if not k.startswith("bn")]
    assert set(kernels) < set(in_pruning_layers) and arrays["class_caps/0"].shape == (16, 10)  # the routing bias

    def zeros_and_total(keys):
        return sum(arrays[k].size - np.count_nonzero(arrays[k]) for k in keys), sum(arrays[k].size for k in keys)

    assert zeros_and_total(kernels) == (121_533, 160_672)  # 75.64 %, 39,139 remain
    assert zeros_and_total(in_pruning_layers) == (121_533, 161_248)  # 75.37 %: no bias is exactly zero
    counted = metrics.sparsity(applications.EffCapsNet(weights="mnist_rem"))
    assert (counted["zeros"], counted["total"]) == (121_533, 160_672)
    assert "39,139 remain" in record.metrics["sparsity"] and "75.37 % of 161,248" in record.metrics["sparsity"]
