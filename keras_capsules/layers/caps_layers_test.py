import json

import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.layers import ConvCaps, FcCaps, PrimaryCaps
from keras_capsules.testing import run_layer_test


def np_squash(s, eps=1e-7):
    q = (s**2).sum(-1, keepdims=True)
    return s * q / (1 + q) / np.sqrt(q + eps)


def np_conv_valid(x, w, b, stride):
    """Plain NumPy convolution, loops over output positions."""
    n, h, width, _ = x.shape
    k = w.shape[0]
    oh, ow = (h - k) // stride + 1, (width - k) // stride + 1
    out = np.zeros((n, oh, ow, w.shape[-1]))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride : i * stride + k, j * stride : j * stride + k, :]
            out[:, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2])) + b
    return out


def test_primary_caps_is_conv_reshaped_and_squashed():
    x = np.random.default_rng(0).normal(size=(2, 9, 9, 3)).astype("float32")
    layer = PrimaryCaps(4, 6, kernel_size=3, strides=2)
    poses, acts = (keras.ops.convert_to_numpy(t) for t in layer(x))
    w, b = (keras.ops.convert_to_numpy(v) for v in layer.pose_conv.weights)
    expected = np_squash(np_conv_valid(x, w, b, 2).reshape(2, 4, 4, 4, 6))
    np.testing.assert_allclose(poses, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(acts, np.linalg.norm(expected, axis=-1), rtol=1e-4, atol=1e-5)


def test_primary_caps_official_scale_adds_the_bias_after_dividing_the_convolution_by_32():
    x = np.random.default_rng(5).normal(size=(2, 9, 9, 3)).astype("float32")
    layer = PrimaryCaps(
        4, 6, kernel_size=3, strides=2, pose_scale=1 / 32, bias_initializer=keras.initializers.Constant(0.1)
    )
    poses, acts = (keras.ops.convert_to_numpy(t) for t in layer(x))
    w, b = keras.ops.convert_to_numpy(layer.pose_conv.kernel), keras.ops.convert_to_numpy(layer.pose_bias)
    assert layer.pose_conv.bias is None and b.shape == (4, 6) and np.all(b == np.float32(0.1))
    expected = np_squash(np_conv_valid(x, w, 0.0, 2).reshape(2, 4, 4, 4, 6) / 32 + 0.1)
    np.testing.assert_allclose(poses, expected, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(acts, np.linalg.norm(expected, axis=-1), rtol=1e-4, atol=1e-6)
    assert layer.count_params() == 3 * 3 * 3 * 24 + 24  # as with the bias inside the convolution
    three = np.concatenate([x, x[:1]])
    run_layer_test(
        PrimaryCaps,
        {"num_capsules": 4, "capsule_dim": 6, "kernel_size": 3, "pose_scale": 0.25},
        three,
        [(3, 7, 7, 4, 6), (3, 7, 7, 4)],
    )
    for bad in (0, -1.0, float("inf"), True):
        with pytest.raises(ValueError, match=r"PrimaryCaps.*pose_scale.*a finite number > 0"):
            PrimaryCaps(4, 6, pose_scale=bad)


@pytest.mark.parametrize("activation", ["squash", "squash_efficient", "layer_norm", "sigmoid", "linear"])
def test_primary_caps_activations(activation):
    x = np.random.default_rng(1).normal(size=(3, 6, 6, 4)).astype("float32")
    outputs = run_layer_test(
        PrimaryCaps,
        {"num_capsules": 2, "capsule_dim": 4, "kernel_size": 3, "activation": activation},
        x,
        expected_output_shapes=[(3, 4, 4, 2, 4), (3, 4, 4, 2)],
        run_export=activation == "sigmoid",
    )
    poses, acts = outputs
    if activation == "layer_norm":
        np.testing.assert_allclose(poses.mean(-1), 0.0, atol=1e-4)
        np.testing.assert_allclose(acts, 1.0)
    if activation == "sigmoid":
        assert np.all((acts > 0) & (acts < 1))


def test_depthwise_primary_caps_matches_efficient_capsnet():
    x = np.random.default_rng(2).normal(size=(2, 9, 9, 128)).astype("float32")
    layer = PrimaryCaps(16, 8, kernel_size=9, depthwise=True, activation="squash_efficient")
    poses, _ = layer(x)
    assert tuple(poses.shape) == (2, 1, 1, 16, 8)
    assert layer.count_params() == 10_496  # docs/reference/models.md#effcapsnet
    with pytest.raises(ValueError, match=r"PrimaryCaps.*channels = num_capsules \* capsule_dim = 128"):
        PrimaryCaps(16, 8, kernel_size=9, depthwise=True)(np.zeros((1, 9, 9, 64), "float32"))


def test_fc_caps_equals_votes_then_dynamic_routing():
    rng = np.random.default_rng(3)
    u = rng.normal(size=(2, 6, 4)).astype("float32")
    layer = FcCaps(3, 5, router={"name": "dynamic", "use_bias": False}, routing_iterations=2)
    poses, _ = layer(u)
    w = keras.ops.convert_to_numpy(layer.vote_transform.kernel)
    votes = np.einsum("bid,iode->bioe", u, w)
    expected = keras.ops.convert_to_numpy(routing.DynamicRouter(iterations=2, use_bias=False)(votes)[0])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(poses), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("router", ["dynamic", "self_attention"])
def test_fc_caps_contract(router):
    u = np.random.default_rng(4).normal(size=(3, 5, 4)).astype("float32")
    acts = np.random.default_rng(5).uniform(size=(3, 5)).astype("float32")
    run_layer_test(
        FcCaps,
        {"num_capsules": 2, "capsule_dim": 3, "router": router},
        (u, acts),
        expected_output_shapes=[(3, 2, 3), (3, 2)],
    )


def test_fc_caps_flattens_grids_and_returns_coupling():
    grid = np.random.default_rng(6).normal(size=(2, 3, 3, 4, 8)).astype("float32")
    poses, acts, coupling = FcCaps(10, 16)(grid, return_coupling=True)
    assert tuple(poses.shape) == (2, 10, 16) and tuple(coupling.shape) == (2, 36, 10)


def np_conv_caps_children(grid, k, s):
    """Receptive fields gathered with explicit loops: (batch*oh*ow, k*k*types, dim)."""
    b, h, w, t, d = grid.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    out = np.zeros((b, oh, ow, k, k, t, d), grid.dtype)
    for i in range(oh):
        for j in range(ow):
            out[:, i, j] = grid[:, i * s : i * s + k, j * s : j * s + k]
    return out.reshape(b * oh * ow, k * k * t, d)


@pytest.mark.parametrize("strides", [1, 2])
def test_conv_caps_routes_each_receptive_field(strides):
    rng = np.random.default_rng(7)
    grid = rng.normal(size=(2, 5, 5, 3, 4)).astype("float32")
    layer = ConvCaps(2, 4, kernel_size=3, strides=strides, router={"name": "dynamic", "use_bias": False})
    poses, _, coupling = layer(grid, return_coupling=True)
    children = np_conv_caps_children(grid, 3, strides)
    fc = FcCaps(2, 4, router={"name": "dynamic", "use_bias": False})
    fc.build(children.shape)
    fc.vote_transform.kernel.assign(layer.vote_transform.kernel)
    expected, _, expected_c = fc(children, return_coupling=True)
    oh = (5 - 3) // strides + 1
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(poses).reshape(-1, 2, 4), keras.ops.convert_to_numpy(expected), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(coupling), keras.ops.convert_to_numpy(expected_c), rtol=1e-5, atol=1e-6
    )
    assert tuple(poses.shape) == (2, oh, oh, 2, 4)


def test_conv_caps_same_padding_and_contract():
    rng = np.random.default_rng(8)
    grid = rng.normal(size=(3, 4, 4, 2, 4)).astype("float32")
    acts = rng.uniform(size=(3, 4, 4, 2)).astype("float32")
    run_layer_test(
        ConvCaps,
        {"num_capsules": 3, "capsule_dim": 5, "kernel_size": 3, "strides": 2, "padding": "same"},
        (grid, acts),
        expected_output_shapes=[(3, 2, 2, 3, 5), (3, 2, 2, 3)],
    )


def test_capsule_layer_errors_name_layer_and_argument():
    with pytest.raises(ValueError, match=r"FcCaps 'digits'.*router.*'nope'"):
        FcCaps(10, 16, router="nope", name="digits")
    with pytest.raises(ValueError, match=r"ConvCaps.*inputs.*rank 5"):
        ConvCaps(2, 4)(np.zeros((2, 5, 5, 8), "float32"))
    with pytest.raises(ValueError, match=r"FcCaps.*inputs.*rank 3 or 5"):
        FcCaps(2, 4)(np.zeros((2, 8), "float32"))
    with pytest.raises(ValueError, match=r"FcCaps.*activations.*\(None, 6\)|FcCaps.*activations"):
        FcCaps(2, 4)((np.zeros((2, 6, 8), "float32"), np.zeros((2, 5), "float32")))
    with pytest.raises(ValueError, match=r"FcCaps.*capsule_dim.*16"):
        FcCaps(2, 9, transform="matrix")(np.zeros((2, 6, 16), "float32"))
    with pytest.raises(ValueError, match=r"MatrixVotes.*perfect square"):
        FcCaps(2, transform="matrix")(np.zeros((2, 6, 8), "float32"))
    with pytest.raises(ValueError, match=r"FcCaps.*router.*iterations.*single pass"):
        FcCaps(2, 4, router=routing.SelfAttentionRouter(), routing_iterations=2)
    with pytest.raises(
        ValueError,
        match=r"ConvCaps 'conv_caps.*': argument `kernel_size` expected .*input's height x width, 2x2 .*received 3",
    ):
        ConvCaps(2, 4, kernel_size=3)(np.zeros((1, 2, 2, 2, 4), "float32"))


def test_primary_caps_kernel_larger_than_its_input_is_named_at_build_time():
    for kernel, received in ((9, "9"), ((3, 6), r"\(3, 6\)")):
        layer = PrimaryCaps(4, 8, kernel_size=kernel, name="primary")
        with pytest.raises(
            ValueError,
            match=rf"PrimaryCaps 'primary': argument `kernel_size` expected .*height x width, 5x5 \(input shape \(None, 5, 5, 3\)\).*received {received}",
        ):
            layer.build((None, 5, 5, 3))
    assert PrimaryCaps(4, 8, kernel_size=5)(np.zeros((1, 5, 5, 3), "float32"))[0].shape == (
        1,
        1,
        1,
        4,
        8,
    )  # fits exactly
    assert PrimaryCaps(4, 8, kernel_size=9, padding="same")(np.zeros((1, 5, 5, 3), "float32"))[0].shape == (
        1,
        5,
        5,
        4,
        8,
    )


@pytest.mark.parametrize("integer", [np.int64, np.int32, np.uint8])
def test_numpy_integer_sizes_are_accepted_and_stored_as_python_ints(integer):
    layers = [
        PrimaryCaps(
            integer(16), integer(16), kernel_size=integer(3), strides=(integer(2), integer(2))
        ),  # 16 * 16 overflows uint8
        ConvCaps(integer(2), integer(4), kernel_size=integer(3), strides=integer(1)),
        FcCaps(integer(3), integer(4), routing_iterations=integer(2)),
    ]
    for layer in layers:
        config = layer.get_config()
        json.dumps(config)  # NumPy integers are not JSON-serialisable: the layers store Python ints
        assert all(type(config[key]) in (int, tuple) for key in ("num_capsules", "capsule_dim") if key in config)
    poses, _ = layers[0](np.zeros((1, 7, 7, 3), "float32"))
    assert poses.shape == (1, 3, 3, 16, 16)  # (7 - 3) // 2 + 1 positions, 256 convolution channels
    for refused in (True, 2.0, 2.5):
        with pytest.raises(TypeError, match=r"FcCaps.*`num_capsules` expected an integer >= 1"):
            FcCaps(refused, 4)
