"""ONNX and LiteRT export of every application, checked against ``predict`` in a process without keras_capsules.

Tiny configurations of each constructor (every router the applications use: dynamic, self-attention,
EM, kernel, LSTM, FM agreement, inverted dot-product attention; GLOM; a model with a reconstruction
decoder) are exported once to both formats; one child process, in which ``import keras_capsules``
fails, runs them all with ONNX Runtime and the LiteRT interpreter.
"""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import onnx
import pytest

from keras_capsules import applications, cli
from keras_capsules.export import export_keras_file, export_model
from keras_capsules.layers import conv_caps
from keras_capsules.saving import save_model
from keras_capsules.testing.glom import with_trained_offsets
from keras_capsules.testing.isolation import BLOCK_LIBRARY
from keras_capsules.testing.tiers import large

pytestmark = [
    pytest.mark.skipif(
        keras.backend.backend() != "tensorflow", reason="ONNX/LiteRT export here is TensorFlow-specific"
    ),
    # Under pytest-xdist (--dist loadgroup) the module-scoped export of every application runs once: every test here on one worker.
    pytest.mark.xdist_group("export_formats"),
]


#: One tiny configuration per constructor; together they cover every router the applications use.
TINY = {
    "AgreementGLOM": lambda: with_trained_offsets(
        applications.AgreementGLOM(input_shape=(16, 16, 1), classes=3, embedding_dim=8, projection_dim=8, window=2)
    ),
    "CapsNet": lambda: applications.CapsNet(input_shape=(20, 20, 1), classes=3),
    "ConsensusCapsNet-kernel": lambda: applications.ConsensusCapsNet(
        router="kernel", input_shape=(32, 32, 1), classes=3
    ),
    "ConsensusCapsNet-lstm": lambda: applications.ConsensusCapsNet(router="lstm", input_shape=(32, 32, 1), classes=3),
    "EffCapsNet-reconstruction": lambda: applications.EffCapsNet(variant="mnist", reconstruction=True),
    "EffConvCapsNet": lambda: applications.EffConvCapsNet(input_shape=(33, 33, 1), classes=3),
    "FMCapsNet": lambda: applications.FMCapsNet(variant="affnist", input_shape=(16, 16, 1), classes=3),
    "InvertedAttentionCapsNet": lambda: applications.InvertedAttentionCapsNet(
        variant="cifar10-simple", include_preprocessing=True, routing_iterations=2
    ),
    "MatrixCapsNet": lambda: applications.MatrixCapsNet(
        variant="small", input_shape=(16, 16, 1), classes=3, routing_iterations=2
    ),
    "ConsensusCapsNet-dynamic-row-chunks": lambda: applications.ConsensusCapsNet(
        router="dynamic", input_shape=(24, 24, 1), classes=3
    ),
}
#: Exported with a 1-byte vote budget: their convolutional capsules predict one output row after another (unrolled).
ROW_CHUNKED = ("ConsensusCapsNet-dynamic-row-chunks",)
#: The default tier: dynamic routing, a reconstruction decoder and convolutional capsules predicting by
#: chunks of rows; the other models run in the large tier.
DEFAULT_TIER = ("CapsNet", "EffCapsNet-reconstruction", "ConsensusCapsNet-dynamic-row-chunks")
#: Largest difference to ``predict`` accepted (the runtimes' kernels round differently).
TOLERANCE = 1e-4

CHILD = BLOCK_LIBRARY + textwrap.dedent(
    """
    import numpy as np
    import onnxruntime
    from ai_edge_litert.interpreter import Interpreter

    folder = sys.argv[1]
    report = {"blocked": blocked, "onnx": {}, "litert": {}}
    for name in sys.argv[2:]:
        data = np.load(f"{folder}/{name}.npz")
        x, expected = data["x"], data["expected"]
        session = onnxruntime.InferenceSession(f"{folder}/{name}.onnx", providers=["CPUExecutionProvider"])
        got = session.run(None, {session.get_inputs()[0].name: x})[0]
        report["onnx"][name] = float(np.max(np.abs(got - expected))) if got.shape == expected.shape else str(got.shape)
        interpreter = Interpreter(model_path=f"{folder}/{name}.tflite")
        entry = interpreter.get_input_details()[0]
        interpreter.resize_tensor_input(entry["index"], x.shape)
        interpreter.allocate_tensors()
        interpreter.set_tensor(entry["index"], x)
        interpreter.invoke()
        got = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        report["litert"][name] = float(np.max(np.abs(got - expected))) if got.shape == expected.shape else str(got.shape)
    report["loaded"] = sorted(m for m in sys.modules if m.startswith("keras_capsules"))
    print("REPORT " + json.dumps(report))
    """
)


def _conv_caps(model):
    """The model's ConvCaps layers (at least one)."""
    layers = [layer for layer in model._flatten_layers(include_self=False) if isinstance(layer, conv_caps.ConvCaps)]
    assert layers
    return layers


def _input_shape(model):
    inputs = model.inputs
    return tuple(inputs[0].shape[1:])


@pytest.fixture(scope="module", params=["default", pytest.param("large", marks=large)])
def served(request, tmp_path_factory):
    """Exports the tier's tiny applications to both formats once and runs them all in one child process."""
    folder = tmp_path_factory.mktemp("formats")
    names = [name for name in TINY if (name in DEFAULT_TIER) == (request.param == "default")]
    for name in names:
        build = TINY[name]
        keras.utils.set_random_seed(0)
        with pytest.MonkeyPatch.context() as patch:
            if name in ROW_CHUNKED:
                patch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 1)
            model = build()
            assert name not in ROW_CHUNKED or all(len(layer.row_chunks(False)) > 1 for layer in _conv_caps(model))
            x = np.random.default_rng(0).uniform(size=(3,) + _input_shape(model)).astype("float32")
            expected = model.predict(x, verbose=0)
            np.savez(folder / f"{name}.npz", x=x, expected=expected)
            export_model(model, str(folder / f"{name}.onnx"), format="onnx")
            export_model(model, str(folder / f"{name}.tflite"), format="litert")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), *names], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return names, json.loads(next(line for line in done.stdout.splitlines() if line.startswith("REPORT "))[7:])


@pytest.mark.parametrize("format", ["onnx", "litert"])
def test_every_application_matches_predict_without_keras_capsules(served, format):
    names, served = served
    assert served["blocked"] and served["loaded"] == []
    assert set(served[format]) == set(names) and names
    for name, difference in served[format].items():
        assert isinstance(difference, float) and difference <= TOLERANCE, (format, name, difference)


class Unexportable(keras.layers.Layer):
    """``erfinv``: neither tf2onnx nor LiteRT's built-in ops have it."""

    def call(self, x):
        return keras.ops.erfinv(keras.ops.tanh(x) * 0.5)


def _model(layer=None):
    inputs = keras.Input((4,))
    x = keras.layers.Dense(3, name="dense")(inputs)
    if layer is not None:
        x = layer(x)
    return keras.Model(inputs, x, name="tiny_model")


@pytest.mark.parametrize("format, suffix", [("onnx", ".onnx"), ("litert", ".tflite")])
def test_unsupported_ops_raise_an_error_naming_model_layer_format_and_op(tmp_path, format, suffix):
    path = tmp_path / f"model{suffix}"
    path.write_bytes(b"previous")
    with pytest.raises(
        ValueError, match=rf"model 'tiny_model' cannot be exported to format='{format}'.* in erf_layer .*Erfinv"
    ):
        export_model(_model(Unexportable(name="erf_layer")), str(path), format=format, overwrite=True)
    assert path.read_bytes() == b"previous" and os.listdir(tmp_path) == [
        path.name
    ]  # nothing replaced, no temporary left


def test_single_file_exports_never_destroy_user_files(tmp_path):
    model = _model()
    with pytest.raises(ValueError, match=r"expected a file name ending in '\.onnx' for format='onnx'"):
        export_model(model, str(tmp_path / "model.tflite"), format="onnx")
    with pytest.raises(
        ValueError, match=r"argument `format` expected one of \['litert', 'onnx', 'savedmodel'\], received 'tflite'"
    ):
        export_model(model, str(tmp_path / "model.tflite"), format="tflite")
    folder = tmp_path / "model.onnx"
    folder.mkdir()
    with pytest.raises(ValueError, match=r"model\.onnx' is an existing folder"):
        export_model(model, str(folder), format="onnx", overwrite=True)
    existing = tmp_path / "model.tflite"
    existing.write_bytes(b"keep me")
    with pytest.raises(ValueError, match=r"model\.tflite' exists; pass overwrite=True"):
        export_model(model, str(existing), format="litert")
    assert existing.read_bytes() == b"keep me"
    export_model(model, str(existing), format="litert", overwrite=True)
    assert existing.read_bytes()[4:8] == b"TFL3"  # the LiteRT flatbuffer identifier
    model_path = str(tmp_path / "model.keras")
    save_model(model, model_path)
    with pytest.raises(ValueError, match=r"export: OUTPUT .*model\.keras' is the input"):
        export_keras_file(model_path, model_path, overwrite=True, format="onnx")
    assert cli.main(["export", model_path, str(tmp_path / "cli.onnx"), "--format", "onnx"]) == 0
    onnx.checker.check_model(str(tmp_path / "cli.onnx"))
    assert (
        cli.main(["export", model_path, str(tmp_path / "cli.onnx"), "--format", "onnx"]) == 2
    )  # exists, no --overwrite
    assert sorted(os.listdir(tmp_path)) == ["cli.onnx", "model.keras", "model.onnx", "model.tflite"]


def test_the_class_names_travel_with_a_savedmodel_and_an_onnx_file(tmp_path):
    named = applications.CapsNet(input_shape=(20, 20, 1), classes=3)
    named.class_names = ("cat", "dog", "café")
    export_model(named, str(tmp_path / "saved"), format="savedmodel")
    asset = tmp_path / "saved" / "assets" / "class_names.json"
    assert json.loads(asset.read_text(encoding="utf-8")) == ["cat", "dog", "café"]
    export_model(named, str(tmp_path / "named.onnx"), format="onnx")
    metadata = {entry.key: entry.value for entry in onnx.load(str(tmp_path / "named.onnx")).metadata_props}
    assert json.loads(metadata["class_names"]) == ["cat", "dog", "café"]
    onnx.checker.check_model(str(tmp_path / "named.onnx"), full_check=True)  # still a valid model
    unnamed = applications.CapsNet(input_shape=(20, 20, 1), classes=3)
    export_model(unnamed, str(tmp_path / "plain"), format="savedmodel")
    export_model(unnamed, str(tmp_path / "plain.onnx"), format="onnx")
    assert not (tmp_path / "plain" / "assets" / "class_names.json").exists()
    assert "class_names" not in {entry.key for entry in onnx.load(str(tmp_path / "plain.onnx")).metadata_props}
