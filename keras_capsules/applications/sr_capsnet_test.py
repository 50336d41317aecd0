"""SRCapsNet: parameter count, structure, options and errors (the registry test covers saving and export)."""

import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.applications import SRCapsNet
from keras_capsules.applications.sr_capsnet import SelfRoutedClasses, ZeroPadShortcut
from keras_capsules.testing import assert_finite, assert_parameter_counts


def official_parameter_count(channels=3, planes=16, types=32, pose=16, classes=10, grid=8):
    """The official resnet20(16, {'channels': 3, 'classes': 10}, 32, 16, 1, mode='SR'), counted from its layer shapes.

    Running ``sum(p.numel() for p in model.parameters())`` on that model of github.com/coder3000/SR-CapsNet
    (models/resnet.py, modules.py) gives 931,664 and 2,464 BatchNorm running statistics.
    """

    def block(c_in, c_out):  # two bias-free 3x3 convolutions with their BatchNorms; the shortcut has no weights
        return 9 * c_in * c_out + 9 * c_out * c_out + 4 * c_out

    stem = 9 * channels * planes + 2 * planes
    stages, c_in = 0, planes
    for width in (planes, 2 * planes, 4 * planes):
        stages += block(c_in, width) + 2 * block(width, width)
        c_in = width
    primary = 9 * c_in * types + 2 * types + 9 * c_in * types * pose + 2 * types * pose
    children = grid * grid * types
    class_routing = children * classes * pose + children * classes  # the code's W2 and b2
    running = 2 * (planes + 3 * 2 * (planes + 2 * planes + 4 * planes) + types + types * pose)
    trainable = stem + stages + primary + class_routing
    return trainable, trainable + running


def test_parameter_counts_are_the_official_codes():
    trainable, total = official_parameter_count()
    assert (trainable, total) == (931_664, 934_128)
    assert_parameter_counts(SRCapsNet(), trainable, total, source="the official code, counted in PyTorch")


def test_structure_and_scores():
    model = SRCapsNet(classes=3)
    classes = model.get_layer("class_caps")
    assert isinstance(classes.router, routing.SelfRoutingRouter)
    assert tuple(classes.router.routing_kernel.shape) == (8 * 8 * 32, 3, 16)
    assert tuple(model.get_layer("primary_poses_split").output.shape[1:]) == (8, 8, 32, 16)
    x = np.random.default_rng(0).uniform(size=(2, 32, 32, 3)).astype("float32")
    scores = keras.ops.convert_to_numpy(model(x))
    assert scores.shape == (2, 3)
    np.testing.assert_allclose(scores.sum(axis=1), 1.0, rtol=1e-5)  # the activations share the children's


def test_class_layer_routes_the_poses_themselves():
    # Zero gate weights: uniform coupling, so each class pose is the activation-weighted mean of the child poses.
    rng = np.random.default_rng(1)
    poses = rng.normal(size=(2, 2, 2, 3, 4)).astype("float32")
    acts = rng.uniform(0.1, 1.0, size=(2, 2, 2, 3)).astype("float32")
    out_poses, out_acts = SelfRoutedClasses(5)((poses, acts))
    flat_p, flat_a = poses.reshape(2, 12, 4), acts.reshape(2, 12)
    expected = np.einsum("bi,bid->bd", flat_a, flat_p) / flat_a.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(out_poses), np.repeat(expected[:, None], 5, 1), rtol=1e-5)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(out_acts), np.full((2, 5), 0.2), rtol=1e-5)


def test_zero_pad_shortcut_is_option_a():
    x = np.arange(2 * 4 * 4 * 8, dtype="float32").reshape(2, 4, 4, 8)
    out = keras.ops.convert_to_numpy(ZeroPadShortcut(16)(x))
    assert out.shape == (2, 2, 2, 16)
    np.testing.assert_array_equal(out[..., 4:12], x[:, ::2, ::2, :])
    assert not out[..., :4].any() and not out[..., 12:].any()


def test_other_router_and_without_top():
    model = SRCapsNet(classes=3, router="dynamic", routing_iterations=2)
    assert isinstance(model.get_layer("class_caps").router, routing.DynamicRouter)
    assert_finite(keras.ops.convert_to_numpy(model(np.ones((1, 32, 32, 3), "float32"))))
    assert tuple(SRCapsNet(include_top=False).output.shape) == (None, 8, 8, 32 * 16)


def test_errors():
    with pytest.raises(ValueError, match=r"SRCapsNet.*router.*'nope'"):
        SRCapsNet(router="nope")
    with pytest.raises(ValueError, match=r"SRCapsNet.*input_shape"):
        SRCapsNet(input_shape=(40, 40, 3))


def test_the_interpretability_tools_read_the_class_layers_coupling():
    from keras_capsules import interpret

    # images -> a 2x2 grid of 3 types (pose 4) -> SelfRoutedClasses(5) with random gates.
    inputs = keras.Input((4, 4, 1))
    features = keras.layers.Conv2D(15, 3, strides=2, padding="same", name="features")(inputs)
    poses = keras.layers.Reshape((2, 2, 3, 5), name="split")(features)
    grid_poses = keras.layers.Lambda(lambda t: t[..., :4], name="poses")(poses)
    grid_acts = keras.layers.Lambda(lambda t: keras.ops.sigmoid(t[..., 4]), name="acts")(poses)
    _, class_acts = SelfRoutedClasses(5, name="class_caps")((grid_poses, grid_acts))
    model = keras.Model(inputs, class_acts)
    rng = np.random.default_rng(2)
    router = model.get_layer("class_caps").router
    kernel, bias = rng.normal(size=(12, 5, 4)), rng.normal(size=(12, 5))
    router.routing_kernel.assign(kernel.astype("float32"))
    router.routing_bias.assign(bias.astype("float32"))
    x = rng.uniform(size=(3, 4, 4, 1)).astype("float32")
    trace = interpret.routing_trace(model, x)
    record = trace["class_caps"]
    assert record.layer_type == "FcCaps" and record.grid_input and record.coupling.shape == (3, 12, 5)
    # NumPy: every child's pose is its vote for every class; c_ij = softmax over the classes of W_ij . u_i + b_ij.
    child_poses = keras.ops.convert_to_numpy(keras.Model(inputs, grid_poses)(x)).reshape(3, 12, 4)
    logits = np.einsum("bik,ijk->bij", child_poses, kernel) + bias
    expected = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(record.coupling, expected / expected.sum(-1, keepdims=True), rtol=1e-4, atol=1e-6)
    maps, _ = interpret.saliency_maps(model, x)  # a 2x2 grid: a map with spatial content
    assert maps.shape == (3, 4, 4)
    report = interpret.parse_tree_report(model, [x], levels=11, include_dictionaries=True)
    assert report["num_samples"] == 3 and all(k.count("-") == 12 for d in report["dictionaries"].values() for k in d)
