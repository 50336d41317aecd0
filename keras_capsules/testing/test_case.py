"""Layer, serialisation, saving and export checks shared by the whole test suite.

``run_layer_test`` is the one-stop check for a layer or router: call, dynamic batch size, config
round trip, ``.keras`` round trip with identical outputs, and (TensorFlow backend) SavedModel export
reloaded with ``tf.saved_model.load`` with identical outputs.
"""

import json
import os
import tempfile

import keras
import numpy as np


def _to_numpy(outputs):
    return [np.asarray(keras.ops.convert_to_numpy(o)) for o in keras.tree.flatten(outputs)]


def assert_finite(outputs, what="outputs"):
    """Asserts every tensor in ``outputs`` is finite."""
    for i, value in enumerate(_to_numpy(outputs)):
        assert np.all(np.isfinite(value.astype("float64"))), f"{what}[{i}] has non-finite values"


def _symbolic_inputs(data):
    def make(x):
        x = np.asarray(x)
        return keras.Input(shape=x.shape[1:], dtype=str(x.dtype))

    return keras.tree.map_structure(make, data)


def _slice_batch(data, size):
    return keras.tree.map_structure(lambda x: np.asarray(x)[:size], data)


def run_serialization_test(instance):
    """``get_config`` is JSON-serialisable and ``from_config(get_config())`` reproduces it exactly."""
    config = instance.get_config()
    json.dumps(keras.saving.serialize_keras_object(instance))
    revived = type(instance).from_config(config)
    assert json.dumps(revived.get_config(), sort_keys=True, default=str) == json.dumps(
        config, sort_keys=True, default=str
    )
    return revived


def run_model_saving_test(model, data, atol=0.0):
    """Saves ``model`` to ``.keras``, reloads it with no custom objects, and compares predictions."""
    expected = _to_numpy(model(data, training=False))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.keras")
        model.save(path)
        revived = keras.saving.load_model(path)
    got = _to_numpy(revived(data, training=False))
    assert len(got) == len(expected)
    for a, b in zip(expected, got):
        np.testing.assert_allclose(b, a, atol=atol, rtol=0)
    return revived


def run_export_test(model, data, atol=1e-6):
    """Exports a SavedModel (TensorFlow backend), reloads it with ``tf.saved_model.load`` and compares."""
    import tensorflow as tf

    expected = _to_numpy(model(data, training=False))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "export")
        model.export(path, verbose=False)
        reloaded = tf.saved_model.load(path)
        got = _to_numpy(reloaded.serve(data))
    assert len(got) == len(expected)
    for a, b in zip(expected, got):
        np.testing.assert_allclose(b, a, atol=atol, rtol=0)


def run_layer_test(
    layer_cls,
    init_kwargs,
    input_data,
    expected_output_shapes=None,
    call_kwargs=None,
    run_saving=True,
    run_export=True,
):
    """Runs the standard checks on a layer.

    Args:
        layer_cls: the layer class.
        init_kwargs: constructor arguments.
        input_data: a NumPy array or a tuple of arrays (the layer's first call argument) with a
            batch of at least 3.
        expected_output_shapes: optional list of expected output shapes (flattened outputs).
        call_kwargs: extra call keyword arguments.
        run_saving: run the ``.keras`` round trip.
        run_export: run the SavedModel check (TensorFlow backend only).

    Returns:
        The eager outputs (flattened, as NumPy arrays).
    """
    call_kwargs = call_kwargs or {}
    layer = layer_cls(**init_kwargs)
    outputs = _to_numpy(layer(input_data, **call_kwargs))
    if expected_output_shapes is not None:
        assert [tuple(o.shape) for o in outputs] == [tuple(s) for s in expected_output_shapes]
    assert_finite(outputs)
    run_serialization_test(layer)

    inputs = _symbolic_inputs(input_data)
    model = keras.Model(inputs, layer_cls(**init_kwargs)(inputs, **call_kwargs))
    full = _to_numpy(model(input_data, training=False))
    examples = len(keras.tree.flatten(input_data)[0])
    for size in (2, 3):
        got = _to_numpy(model(_slice_batch(input_data, size), training=False))
        # Each output holds k rows per example (k = 1, or the positions folded into the batch axis),
        # so a smaller batch gives the first size * k rows of the full batch's output.
        for o, f in zip(got, full):
            rows = f.shape[0] // examples * size
            assert f.shape[0] % examples == 0 and o.shape == (rows,) + f.shape[1:], (o.shape, f.shape)
            np.testing.assert_allclose(o, f[:rows], rtol=1e-5, atol=1e-6)
    if run_saving:
        run_model_saving_test(model, input_data)
    if run_export and keras.backend.backend() == "tensorflow":
        run_export_test(model, input_data)
    return outputs
