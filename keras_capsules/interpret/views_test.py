"""Saliency (eq. 16), FC parse trees, PNG views and ``keras-capsules explain``."""

import json
import sys

import keras
import numpy as np
import pytest

from keras_capsules import layers
from keras_capsules.cli import main
from keras_capsules.interpret import (
    LayerRouting,
    RoutingTrace,
    fc_parse_tree,
    parse_tree_report,
    plot_parse_tree,
    plot_saliency,
    routing_trace,
    saliency_maps,
)

PNG = b"\x89PNG\r\n\x1a\n"


def _grid_model():
    """8x8x1 images -> primary 3x3 grid of 2 types -> FcCaps(4 hidden) -> FcCaps(3 classes)."""
    inputs = keras.Input((8, 8, 1))
    primary = layers.PrimaryCaps(2, 4, kernel_size=3, strides=2, name="primary_caps")(inputs)
    hidden = layers.FcCaps(4, 4, name="hidden_caps")(primary)
    poses, _ = layers.FcCaps(3, 4, name="class_caps")(hidden)
    return keras.Model(inputs, layers.Length()(poses), name="grid_model")


def _bilinear(grid, size):
    """NumPy bilinear upsampling with half-pixel centres (TensorFlow's and Keras' ``resize``): ``(b, h, w)`` -> ``(b, *size)``."""

    def weights(n_in, n_out):
        source = np.clip((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0, n_in - 1)
        low = np.floor(source).astype(int)
        high = np.minimum(low + 1, n_in - 1)
        matrix = np.zeros((n_out, n_in))
        np.add.at(matrix, (np.arange(n_out), low), 1 - (source - low))
        np.add.at(matrix, (np.arange(n_out), high), source - low)
        return matrix

    return np.einsum("yh,bhw,xw->byx", weights(grid.shape[1], size[0]), grid, weights(grid.shape[2], size[1]))


def test_saliency_is_eq_16_upsampled():
    model = _grid_model()
    x = np.random.default_rng(0).uniform(size=(2, 8, 8, 1)).astype("float32")
    maps, _ = saliency_maps(model, x)
    assert maps.shape == (2, 8, 8)
    # Eq. 16 from the layers' own outputs, not from the trace saliency_maps builds: the last FcCaps
    # layer with grid children is hidden_caps; its children are the 3x3x2 primary capsules.
    primary = keras.Model(model.input, model.get_layer("primary_caps").output)(x)
    _, _, coupling = model.get_layer("hidden_caps")(primary, return_coupling=True)
    coupling = keras.ops.convert_to_numpy(coupling).reshape(2, 3, 3, 2, 4)
    norms = np.linalg.norm(keras.ops.convert_to_numpy(primary[0]), axis=-1)  # (2, 3, 3, 2)
    j = keras.ops.convert_to_numpy(model(x)).argmax(-1)
    expected = np.stack([(norms[b] * coupling[b, ..., j[b]]).mean(-1) for b in range(2)])  # (2, 3, 3)
    np.testing.assert_allclose(maps, _bilinear(expected, (8, 8)), rtol=1e-5, atol=1e-6)
    # The bilinear map keeps the grid's range.
    assert maps.min() >= expected.min() - 1e-6 and maps.max() <= expected.max() + 1e-6
    chosen, _ = saliency_maps(model, x, layer="hidden_caps", classes=[0, 0])
    assert chosen.shape == (2, 8, 8)
    with pytest.raises(ValueError, match=r"saliency_layer.*grid"):
        saliency_maps(model, x, layer="class_caps")


def _one_position_model():
    """28x28x1 images -> primary capsules on a 1x1 grid of 2 types (Efficient-CapsNet's layout) -> FcCaps(10 classes)."""
    inputs = keras.Input((28, 28, 1))
    primary = layers.PrimaryCaps(2, 4, kernel_size=28, strides=1, name="primary_caps")(inputs)
    poses, _ = layers.FcCaps(10, 4, name="class_caps")(primary)
    return keras.Model(inputs, layers.Length()(poses), name="one_position")


def test_saliency_refuses_a_grid_of_one_position_whose_map_would_be_constant(tmp_path, capsys):
    model = _one_position_model()
    x = np.random.default_rng(1).uniform(size=(2, 28, 28, 1)).astype("float32")
    message = r"saliency_layer.*more than one position.*FcCaps 'class_caps' with children 1x1 grid of 2 types"
    with pytest.raises(ValueError, match=message):
        saliency_maps(model, x)
    with pytest.raises(ValueError, match=message):
        saliency_maps(model, x, layer="class_caps")
    path = str(tmp_path / "one.keras")
    model.save(path)
    out = tmp_path / "explain"
    code = main(["explain", path, "--limit", "8", "--batch-size", "8", "--num-images", "1", "--output", str(out)])
    printed = capsys.readouterr().out
    assert code == 0 and "Wrote entropy.json and 1 picture to" in printed
    assert "(saliency not drawn: no routed FcCaps layer has children on a grid" in printed
    report = json.loads((out / "entropy.json").read_text())
    assert report["files"] == ["parse_tree_0.png"] and not (out / "saliency.png").exists()
    assert report["saliency"].startswith("not drawn")


def test_images_of_another_shape_than_the_models_input_are_named_before_any_routing(tmp_path, capsys):
    model = _grid_model()  # 8x8x1 inputs
    with pytest.raises(
        ValueError, match=r"routing_trace: argument `images` expected a batch of shape \(batch, 8, 8, 1\)"
    ):
        routing_trace(model, np.zeros((3, 28, 28, 1), "float32"))
    with pytest.raises(ValueError, match=r"parse_tree_report: .* received \(3, 8, 9\)"):
        parse_tree_report(model, [np.zeros((3, 8, 9), "float32")])
    assert routing_trace(model, np.zeros((3, 8, 8), "float32")).scores.shape == (3, 3)  # grey without its axis
    path = str(tmp_path / "grid.keras")
    model.save(path)
    code = main(["explain", path, "--limit", "8", "--num-images", "0", "--output", str(tmp_path / "x")])
    assert code != 0 and not (tmp_path / "x").exists()
    assert (
        "takes images of shape (8, 8, 1), but 'mnist_sample' (test) gives (28, 28, 1); pass --dataset"
        in capsys.readouterr().err
    )


def _record(name, coupling, in_acts, out_acts, sums_over="parents"):
    coupling = np.asarray(coupling, "float32")[None]
    poses = np.zeros(coupling.shape[:2] + (2,), "float32")
    in_acts, out_acts = np.asarray(in_acts, "float32")[None], np.asarray(out_acts, "float32")[None]
    return LayerRouting(name, "FcCaps", coupling, poses, in_acts, out_acts, coupling_sums_over=sums_over)


def test_fc_parse_tree_backtracks_with_the_in_degree_rule():
    # Level 0: 3 children; level 1: 2 capsules; level 2: 2 classes. Thresholds 1/2.
    first = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]]  # in-degrees of level 1: capsule 0 <- {0, 2}, capsule 1 <- {1}
    second = [[0.3, 0.7], [0.45, 0.55]]  # class 1 <- {0, 1}; class 0 gets nothing above 1/2
    trace = RoutingTrace(
        scores=np.array([[0.1, 0.9]], "float32"),
        layers=[_record("hidden", first, [1, 1, 1], [0.6, 0.4]), _record("classes", second, [0.6, 0.4], [0.1, 0.9])],
    )
    tree = fc_parse_tree(trace, index=0)
    assert tree["predicted"] == 1 and tree["thresholds"] == [0.5, 0.5]
    assert tree["levels"][1]["in_degree"] == [2, 1] and tree["levels"][2]["in_degree"] == [0, 2]
    assert tree["edges"] == [
        (0, 0, 0, pytest.approx(0.9)),
        (0, 1, 1, pytest.approx(0.8)),
        (0, 2, 0, pytest.approx(0.6)),
        (1, 0, 1, pytest.approx(0.7)),
        (1, 1, 1, pytest.approx(0.55)),
    ]
    assert [level["kept"] for level in tree["levels"]] == [[0, 1, 2], [0, 1], [1]]

    # A capsule with in-degree 0 sends no edges: at threshold 0.85 hidden capsule 1 receives nothing,
    # so its 0.95 coupling to the predicted class is not drawn.
    trace.layers[1] = _record("classes", [[0.1, 0.9], [0.05, 0.95]], [0.6, 0.4], [0.1, 0.9])
    strict = fc_parse_tree(trace, index=0, threshold=0.85)
    assert strict["levels"][1]["in_degree"] == [1, 0] and strict["levels"][2]["in_degree"] == [0, 2]
    assert strict["edges"] == [(0, 0, 0, pytest.approx(0.9)), (1, 0, 1, pytest.approx(0.9))]
    trace.layers[1] = _record("classes", [[0.3, 0.7, 0.0]] * 3, [0, 0, 0], [0, 0, 1])
    with pytest.raises(ValueError, match=r"fc_routing_chain.*consecutive"):
        fc_parse_tree(trace)


def test_fc_parse_tree_takes_the_uniform_share_over_the_children_where_the_coupling_sums_over_them():
    # 4 children, 2 classes, each class's coupling summing to 1 over the children (FM agreement's proxy):
    # the uniform share is 1/4, so class 1 keeps children 0 and 3 (0.3 and 0.4), not 1 and 2 (0.1 and 0.2).
    coupling = [[0.5, 0.3], [0.2, 0.1], [0.1, 0.2], [0.2, 0.4]]
    trace = RoutingTrace(
        scores=np.array([[0.2, 0.8]], "float32"), layers=[_record("classes", coupling, [1] * 4, [0.2, 0.8], "children")]
    )
    tree = fc_parse_tree(trace)
    assert tree["thresholds"] == [0.25] and tree["levels"][0]["kept"] == [0, 3]
    assert tree["edges"] == [(0, 0, 1, pytest.approx(0.3)), (0, 3, 1, pytest.approx(0.4))]


def test_views_write_pngs(tmp_path):
    model = _grid_model()
    x = np.random.default_rng(0).uniform(size=(3, 8, 8, 1)).astype("float32")
    maps, trace = saliency_maps(model, x)
    path = plot_saliency(x, maps, str(tmp_path / "views" / "saliency.png"), titles=["a", "b", "c"])
    assert open(path, "rb").read(8) == PNG
    path = plot_parse_tree(fc_parse_tree(trace, index=1), str(tmp_path / "tree.png"))
    assert open(path, "rb").read(8) == PNG


def test_missing_matplotlib_gives_an_install_hint(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"matplotlib.*keras-capsules\[plots\]"):
        plot_saliency(np.zeros((1, 4, 4, 1)), np.zeros((1, 4, 4)), str(tmp_path / "s.png"))


def test_explain_command_writes_the_report_and_pictures(tmp_path, capsys):
    inputs = keras.Input((28, 28, 1))
    primary = layers.PrimaryCaps(2, 4, kernel_size=9, strides=4, name="primary_caps")(inputs)
    poses, _ = layers.FcCaps(10, 4, name="class_caps")(primary)
    path = str(tmp_path / "tiny.keras")
    keras.Model(inputs, layers.Length()(poses)).save(path)
    out = tmp_path / "explain"
    code = main(
        [
            "explain",
            path,
            "--limit",
            "40",
            "--batch-size",
            "16",
            "--num-images",
            "2",
            "--levels",
            "6",
            "--output",
            str(out),
            "--dictionaries",
        ]
    )
    assert code == 0 and "routing entropy" in capsys.readouterr().out
    report = json.loads((out / "entropy.json").read_text())
    assert report["num_samples"] == 40 and report["levels"] == 6 and report["quantized"]
    assert sum(c["samples"] for c in report["classes"].values()) == 40
    assert sum(sum(d.values()) for d in report["dictionaries"].values()) == 40
    assert report["sparsity"] == 0.0
    assert report["files"] == ["saliency.png", "parse_tree_0.png", "parse_tree_1.png"]
    assert all((out / name).read_bytes()[:8] == PNG for name in report["files"])
