"""REM's quantiser, parse-tree keys, dictionaries and entropy against hand-computed examples (docs/reference/rem.md#parse-tree-dictionaries-and-entropy)."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import layers
from keras_capsules.interpret import ParseTreeDictionary, parse_tree_report, quantization, routers, tree_keys
from keras_capsules.metrics import RoutingEntropy, routing_entropy
from keras_capsules.ops import quantize_uniform


def test_quantiser_q_k_by_hand():
    # K = 11: centres 0, 0.1, ..., 1 with edges at -0.05, 0.05, ..., 1.05 (REM inference.py).
    x = np.array([0.0, 0.04, 0.06, 0.449, 0.451, 0.97, 1.0, 1.3, -0.2], "float32")
    expected = [0.0, 0.0, 0.1, 0.4, 0.5, 1.0, 1.0, 1.0, 0.0]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(quantize_uniform(x, 11)), expected, atol=1e-6)
    # K = 3: centres 0, 0.5, 1.
    x = np.array([0.2, 0.3, 0.74, 0.76], "float32")
    np.testing.assert_allclose(keras.ops.convert_to_numpy(quantize_uniform(x, 3)), [0.0, 0.5, 0.5, 1.0], atol=1e-6)


def test_tree_keys_by_hand():
    # 2 examples, 3 children, 2 classes; the key uses the column of the predicted class.
    coupling = np.array(
        [
            [[0.0, 1.0], [0.31, 0.69], [0.5, 0.5]],
            [[0.94, 0.06], [0.2, 0.8], [0.05, 0.95]],
        ],
        "float32",
    )
    # Example 0, class 1: 1.0 -> bin 10 -> "11"; 0.69 -> 0.7 -> "8"; 0.5 -> "6".
    # Example 1, class 0: 0.94 -> 0.9 -> "10"; 0.2 -> "3"; 0.05 -> 0.1 -> "2" (0.5 rounds up in q_K).
    assert tree_keys(coupling, np.array([1, 0]), levels=11) == ["11-8-6-", "10-3-2-"]
    # Grid layout (batch, H, W, types, classes) flattens in (row, column, type) order.
    grid = coupling.reshape(2, 1, 3, 1, 2)
    assert tree_keys(grid, [1, 0], levels=11) == ["11-8-6-", "10-3-2-"]
    assert tree_keys(coupling, [0, 0], levels=3) == ["1-2-2-", "3-1-1-"]
    with pytest.raises(ValueError, match=r"tree_keys.*coupling"):
        tree_keys(coupling, [0, 1, 1])


def test_entropy_and_dictionaries_by_hand():
    assert routing_entropy([2, 1, 1]) == pytest.approx(1.5)
    assert routing_entropy({"a": 5}) == 0.0 and routing_entropy([]) == 0.0
    assert routing_entropy([1, 1, 1, 1]) == pytest.approx(2.0)
    assert routing_entropy([1, 1, 1, 1], base=4) == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"routing_entropy.*counts"):
        routing_entropy([1, -1])

    # Class 0: keys A, A, B, C (H = 1.5 bits, 3 trees); class 1: one key twice (H = 0, 1 tree).
    a, b, c = [[1.0, 0.0]], [[0.5, 0.5]], [[0.0, 1.0]]
    coupling = np.array([a, a, b, c, c, c], "float32")  # (6, 1 child, 2 classes)
    predictions = np.array([0, 0, 0, 0, 1, 1])
    dictionary = ParseTreeDictionary(levels=11)
    dictionary.update(coupling[:3], predictions[:3])
    dictionary.update(coupling[3:], predictions[3:])
    assert dict(dictionary.counts[0]) == {"11-": 2, "6-": 1, "1-": 1}
    assert dict(dictionary.counts[1]) == {"11-": 2}
    assert dictionary.entropies() == {0: pytest.approx(1.5), 1: 0.0}
    assert dictionary.num_trees() == {0: 3, 1: 1}
    assert dictionary.mean_entropy() == pytest.approx(0.75)
    summary = dictionary.summary(include_dictionaries=True)
    assert summary["num_samples"] == 6 and summary["num_trees_total"] == 4
    assert summary["entropy_std"] == pytest.approx(0.75)
    assert summary["classes"]["0"] == {"samples": 4, "entropy": pytest.approx(1.5), "num_trees": 3}
    assert summary["dictionaries"]["1"] == {"11-": 2}

    metric = RoutingEntropy(levels=11)
    scores = np.eye(2, dtype="float32")[predictions]
    metric.update_state(coupling, scores)
    assert metric.result() == pytest.approx(0.75) and metric.num_trees() == {0: 3, 1: 1}
    assert metric.class_entropies() == {0: pytest.approx(1.5), 1: 0.0}
    metric.reset_state()
    assert metric.result() == 0.0


def _fc_model(router=None):
    inputs = keras.Input((6, 6, 1))
    primary = layers.PrimaryCaps(2, 4, kernel_size=3, strides=1, name="primary_caps")(inputs)
    router = router or {"name": "dynamic", "use_bias": True}
    poses, _ = layers.FcCaps(3, 4, router=router, name="class_caps")(primary)
    return keras.Model(inputs, layers.Length()(poses))


def test_report_over_a_tf_data_dataset_matches_the_layer_coupling():
    model = _fc_model()
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(20, 6, 6, 1)).astype("float32")
    y = rng.integers(0, 3, size=20).astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    report = parse_tree_report(model, dataset, levels=5, include_dictionaries=True)
    assert [r.quantize_levels for r in routers(model)] == [None]  # restored
    # Expected dictionaries from the class layer's own quantised coupling (not from a routing trace).
    primary = keras.Model(model.input, model.get_layer("primary_caps").output)(x)
    with quantization(model, 5):
        _, _, coupling = model.get_layer("class_caps")(primary, training=False, return_coupling=True)
        predictions = keras.ops.convert_to_numpy(model(x, training=False)).argmax(-1)  # with the quantised routing
    expected = ParseTreeDictionary(5)
    expected.update(keras.ops.convert_to_numpy(coupling), predictions)
    assert report["num_samples"] == 20 and report["layer"] == "class_caps" and report["quantized"]
    assert report["accuracy"] == pytest.approx(float((predictions == y).mean()))
    assert report["dictionaries"] == {str(k): dict(v) for k, v in expected.counts.items()}
    assert report["entropy_mean"] == pytest.approx(expected.mean_entropy())
    for keys in report["dictionaries"].values():  # 4x4 positions x 2 types, indices 1..K
        assert all(key.count("-") == 4 * 4 * 2 and all(1 <= int(k) <= 5 for k in key.split("-")[:-1]) for key in keys)

    first = parse_tree_report(model, dataset.map(lambda a, b: a), levels=5, quantize=False, max_batches=1)
    assert first["num_samples"] == 8 and first["accuracy"] is None and not first["quantized"]
    assert math.isfinite(first["entropy_mean"])
    with pytest.raises(ValueError, match=r"parse_tree_report.*layer"):
        parse_tree_report(model, dataset, layer="nope")


def test_a_coupling_normalised_over_the_children_gets_a_note_and_a_single_key_per_class():
    x = np.random.default_rng(2).uniform(size=(12, 6, 6, 1)).astype("float32")
    report = parse_tree_report(_fc_model("fm_agreement"), [x], levels=11, include_dictionaries=True)
    # 32 children sharing each parent: every coupling is near 1/32, inside the lowest bin of q_11 (below 0.05).
    assert all(set(keys) == {"1-" * 32} for keys in report["dictionaries"].values())
    assert report["entropy_mean"] == 0.0
    assert "class_caps's fm_agreement routing weights each parent's 32 children" in report["note"]
    assert "note" not in parse_tree_report(_fc_model(), [x], levels=11)  # dynamic routing: over the parents
