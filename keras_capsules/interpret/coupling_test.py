"""Coupling access on constructor-built and ``.keras``-loaded models, and switching REM's quantiser on."""

import keras
import numpy as np
import pytest

from keras_capsules import applications, layers
from keras_capsules.interpret import quantization, routers, routing_layer_names, routing_trace, set_quantization


def conv_chain_model():
    """Primary -> ConvCaps (K3 s2) -> FcCaps -> lengths on 12x12x2 images."""
    inputs = keras.Input((12, 12, 2))
    x = keras.layers.Conv2D(8, 3, activation="relu", name="conv1")(inputs)
    primary = layers.PrimaryCaps(3, 4, kernel_size=3, name="primary_caps")(x)
    grid = layers.ConvCaps(4, 4, kernel_size=3, strides=2, name="conv_caps")(primary)
    poses, _ = layers.FcCaps(5, 6, name="class_caps")(grid)
    return keras.Model(inputs, layers.Length(name="length")(poses), name="chain")


def images(batch=3, shape=(12, 12, 2)):
    return np.random.default_rng(0).uniform(size=(batch,) + shape).astype("float32")


def test_trace_of_conv_and_fc_layers_matches_the_model(tmp_path):
    model = conv_chain_model()
    x = images()
    trace = routing_trace(model, x)
    assert routing_layer_names(model) == ["conv_caps", "class_caps"] == [r.name for r in trace.layers]
    conv, fc = trace.layers
    # ConvCaps: 8x8 primary grid, K3 s2 -> 3x3 positions folded into the batch; 3*3*3 children.
    assert conv.layer_type == "ConvCaps" and conv.coupling.shape == (3 * 3 * 3, 27, 4)
    assert conv.input_poses.shape == (3, 8, 8, 3, 4) and conv.input_activations.shape == (3, 8, 8, 3)
    assert conv.output_activations.shape == (3, 3, 3, 4)
    assert fc.layer_type == "FcCaps" and fc.coupling.shape == (3, 3 * 3 * 4, 5) and fc.grid_input
    assert fc.class_coupling().shape == (3, 3, 3, 4, 5)
    np.testing.assert_allclose(fc.coupling.sum(-1), 1.0, rtol=1e-5)  # softmax over parents
    np.testing.assert_allclose(trace.scores, keras.ops.convert_to_numpy(model(x)), atol=1e-6)
    np.testing.assert_array_equal(trace.predictions, trace.scores.argmax(-1))
    assert trace.last is fc and trace["conv_caps"] is conv

    path = str(tmp_path / "chain.keras")
    model.save(path)  # the probe added nothing to the saved graph
    revived = keras.saving.load_model(path)
    assert len(revived.layers) == len(model.layers)
    again = routing_trace(revived, x)
    for a, b in zip(trace.layers, again.layers):
        np.testing.assert_allclose(b.coupling, a.coupling, atol=1e-6)
        np.testing.assert_allclose(b.input_activations, a.input_activations, atol=1e-6)


def test_trace_of_a_model_with_a_decoder():
    model = applications.CapsNet(input_shape=(20, 20, 1), reconstruction=True)
    trace = routing_trace(model, images(2, (20, 20, 1)))
    assert type(model).__name__ == "CapsuleClassifier" and model.decoder is not None
    assert trace.last.name == "class_caps" and trace.last.coupling.shape == (2, 2 * 2 * 32, 10)
    assert trace.scores.shape == (2, 10)


def test_trace_of_inverted_attention_capsnet_reads_the_concurrent_stack(tmp_path):
    model = applications.InvertedAttentionCapsNet(variant="cifar10-simple", classes=4)
    x = images(2, (32, 32, 3))
    trace = routing_trace(model, x)
    stack = model.get_layer("capsules")
    assert (
        routing_layer_names(model) == [layer.name for layer in stack.capsule_layers] == [r.name for r in trace.layers]
    )
    assert [r.layer_type for r in trace.layers] == ["ConvCaps", "ConvCaps", "FcCaps"]
    # the final sweep's tensors, as the stack computes them from the primary capsules
    primary = keras.Model(model.inputs, model.get_layer("primary_caps").output)(x)
    for record, entry in zip(trace.layers, stack.routing_tensors(primary)):
        np.testing.assert_allclose(record.coupling, keras.ops.convert_to_numpy(entry["coupling"]), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            record.input_poses, keras.ops.convert_to_numpy(entry["input_poses"]), rtol=1e-5, atol=1e-6
        )
        np.testing.assert_allclose(record.coupling.sum(-1), 1.0, rtol=1e-5)  # softmax over parents
    assert trace.last.class_coupling().shape[-1] == 4 and trace.last.grid_input
    np.testing.assert_allclose(trace.scores, keras.ops.convert_to_numpy(model(x)), rtol=1e-5, atol=1e-6)
    path = str(tmp_path / "idpa.keras")
    model.save(path)
    again = routing_trace(keras.saving.load_model(path), x, layers=[trace.last.name])
    assert [r.name for r in again.layers] == [trace.last.name]
    np.testing.assert_allclose(again.last.coupling, trace.last.coupling, rtol=1e-5, atol=1e-6)


def test_bare_pose_inputs_report_pose_lengths_as_activations():
    inputs = keras.Input((7, 4))
    poses, _ = layers.FcCaps(3, 4, name="caps")(inputs)
    model = keras.Model(inputs, layers.Length()(poses))
    x = np.random.default_rng(1).normal(size=(2, 7, 4)).astype("float32")
    record = routing_trace(model, x).last
    np.testing.assert_allclose(record.input_activations, np.linalg.norm(x, axis=-1), rtol=1e-6)
    with pytest.raises(ValueError, match="class_coupling.*FcCaps"):
        routing_trace(conv_chain_model(), images())["conv_caps"].class_coupling()


def test_quantization_switches_every_router_and_is_restored(tmp_path):
    model = conv_chain_model()
    x = images()
    plain = routing_trace(model, x)
    with quantization(model, 11):
        assert [r.quantize_levels for r in routers(model)] == [11, 11]
        quantised = routing_trace(model, x)
    assert [r.quantize_levels for r in routers(model)] == [None, None]
    for record in quantised.layers:
        np.testing.assert_allclose(record.coupling * 10, np.round(record.coupling * 10), atol=1e-5)
    np.testing.assert_allclose(quantised.last.coupling, np.round(plain.last.coupling * 10) / 10, atol=1e-5)

    assert set_quantization(model, 21) == [None, None]
    path = str(tmp_path / "q.keras")
    model.save(path)
    revived = keras.saving.load_model(path)
    assert [r.quantize_levels for r in routers(revived)] == [21, 21]


def test_errors_name_the_function_and_argument():
    with pytest.raises(ValueError, match=r"set_quantization.*levels.*>= 2"):
        set_quantization(conv_chain_model(), 1)
    dense = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    with pytest.raises(ValueError, match=r"set_quantization.*model.*router"):
        set_quantization(dense, 11)
    plain = keras.Model(*(lambda i: (i, keras.layers.Dense(2)(i)))(keras.Input((3,))))
    with pytest.raises(
        ValueError, match=r"routed_layer_calls.*routed capsule layer \(FcCaps, ConvCaps, ConcurrentRouting\)"
    ):
        routing_trace(plain, np.zeros((1, 3), "float32"))
    with pytest.raises(TypeError, match=r"routing_graph.*functional"):
        routing_trace(object(), None)
