import keras
import numpy as np
import pytest

from keras_capsules.layers import VectorRouting
from keras_capsules.testing import (
    assert_finite,
    count_weights,
    input_gradient,
    numeric_gradient,
    run_layer_test,
    run_model_saving_test,
)

# (n_inp, n_out, d_inp, d_out, n_iters, normalize, memory_efficient)
CONFIGS = [
    (6, 3, 5, 4, 2, True, True),
    (6, 3, 5, 4, 3, False, False),
    (None, 4, 5, 1, 3, True, True),
    (None, 3, 5, 4, 4, False, False),
    (7, 2, 3, 6, 1, True, True),
]


def np_layer_norm(x, eps=1e-5):
    centred = x - x.mean(-1, keepdims=True)
    return centred / np.sqrt((centred**2).mean(-1, keepdims=True) + eps)


def np_vector_routing(x, w, n_iters, normalize, ignore=None):
    """Heinsen 2022's routing in float64 with the votes formed explicitly. ``w``: the layer's weights by name."""
    batch, n, _ = x.shape
    n_out, d_out = w["B_F2"].shape
    norm = np_layer_norm if d_out > 1 else (lambda v: v)
    s = x / np.sqrt(n)
    a = (s * w["W_A"]).sum(-1) + w["B_A"]  # (b, i)
    f_a = np.broadcast_to((1 / (1 + np.exp(-a)))[:, :, None], (batch, n, n_out))
    keep = np.ones((n, n_out)) if ignore is None else 1.0 - ignore
    f_a = f_a * keep
    if "beta_use" in w:
        beta_use, beta_ign = w["beta_use"], w["beta_ign"]
    else:
        beta_use = x @ w["beta_use_kernel"] + w["beta_use_bias"]
        beta_ign = x @ w["beta_ign_kernel"] + w["beta_ign_bias"]
    votes = np.einsum("bid,jd,dh->bijh", s, w["W_F1"], w["W_F2"]) + w["B_F2"]
    out = None
    for t in range(n_iters):
        if t == 0:
            r = keep / np.maximum(keep.sum(-1, keepdims=True), 1)
        else:
            p = np.einsum("bjh,hd->bjd", norm(out), w["W_G1"]) * w["W_G2"] + w["B_G2"]
            z = np.einsum("bid,bjd->bij", x, p) * w["W_S"] + w["B_S"]
            logits = -np.logaddexp(0, -z)  # log sigmoid
            e = np.exp(logits - logits.max(-1, keepdims=True)) * keep
            r = e / np.maximum(e.sum(-1, keepdims=True), 1e-300)  # 0 for an input every output ignores
        d_use = f_a * r
        phi = beta_use * d_use - beta_ign * (f_a - d_use)
        out = np.einsum("bij,bijh->bjh", phi, votes)
    return norm(out) if normalize else out


def make_layer(config, n, seed=0, scale=0.5):
    """A built layer whose weights are random NumPy arrays (biases included), and those arrays in float64."""
    n_inp, n_out, d_inp, d_out, n_iters, normalize, memory_efficient = config
    layer = VectorRouting(n_inp, n_out, d_inp, d_out, n_iters, normalize, memory_efficient)
    layer.build((None, n, d_inp))
    rng = np.random.default_rng(seed)
    weights = {}
    for variable in layer.weights:
        value = rng.normal(scale=scale, size=variable.shape)
        variable.assign(value.astype("float32"))
        weights[variable.name] = value.astype("float32").astype("float64")
    return layer, weights


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_matches_numpy_reference(config):
    n = config[0] or 6
    layer, weights = make_layer(config, n)
    x = np.random.default_rng(1).normal(size=(3, n, config[2])).astype("float32")
    got = keras.ops.convert_to_numpy(layer(x))
    expected = np_vector_routing(x.astype("float64"), weights, config[4], config[5])
    assert got.shape == (3, config[1], config[3]) and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("config", [CONFIGS[1], CONFIGS[3]], ids=str)
def test_ignore_mask_matches_numpy_reference(config):
    n = config[0] or 6
    layer, weights = make_layer(config, n, seed=2)
    x = np.random.default_rng(3).normal(size=(3, n, config[2])).astype("float32")
    ignore = np.random.default_rng(4).random((n, config[1])) < 0.4
    ignore[0] = True  # an input every output ignores contributes nothing (the official code gives NaN)
    expected = np_vector_routing(x.astype("float64"), weights, config[4], config[5], ignore=ignore)
    for mask in (ignore, np.broadcast_to(ignore, (3, *ignore.shape))):
        got = keras.ops.convert_to_numpy(layer(x, ignore_mask=mask))
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("config", [CONFIGS[0], CONFIGS[3]], ids=str)
def test_input_gradient_matches_numpy_finite_differences(config):
    n = config[0] or 4
    layer, weights = make_layer(config, n, seed=5)
    x = np.random.default_rng(6).normal(size=(2, n, config[2]))
    loss_weights = np.random.default_rng(7).normal(size=(2, config[1], config[3]))
    got = input_gradient(lambda v: keras.ops.multiply(layer(v), loss_weights.astype("float32")), x.astype("float32"))
    expected = numeric_gradient(lambda v: (np_vector_routing(v, weights, config[4], config[5]) * loss_weights).sum(), x)
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4)


def test_parameter_count_matches_the_official_code():
    # sum(p.numel() for p in EfficientVectorRouting(n_inp, 3, 5, 4).parameters()), the official code
    # (github.com/glassroom/heinsen_routing) run in PyTorch 2.13 on the CPU: 205 for n_inp=6, 145 for n_inp=-1.
    # From the code's shapes: n_inp (d_inp + 1) + 3 n_out d_inp + 2 d_inp d_out + n_out d_out + 4 n_inp n_out
    # (W_A, B_A; W_F1, W_G2, B_G2; W_F2, W_G1; B_F2; W_S, B_S, beta_use, beta_ign); with a variable number of
    # inputs n_inp is 1 in the first and 2 * n_out * (d_inp + 1) (two Linear layers) replaces the betas.
    for n_inp, official in ((6, 205), (None, 145)):
        layer = VectorRouting(n_inp, 3, 5, 4)
        layer.build((None, n_inp or 6, 5))
        rows = n_inp or 1
        shapes = rows * 6 + 3 * 3 * 5 + 2 * 5 * 4 + 3 * 4 + 2 * rows * 3
        shapes += 2 * rows * 3 if n_inp else 2 * 3 * 6
        assert count_weights(layer.trainable_weights) == shapes == official


def test_initialisation_follows_the_official_code():
    layer = VectorRouting(400, 20, 64, 32)
    layer.build((None, 400, 64))
    std = {name: keras.ops.convert_to_numpy(getattr(layer, name)).std() for name in ("W_A", "W_F2", "W_G1", "W_S")}
    np.testing.assert_allclose(
        [std["W_A"], std["W_F2"], std["W_G1"], std["W_S"]], [2 / 8, 2 / 8, 1 / 32**0.5, 1 / 8], rtol=0.15
    )
    for name in ("W_F1", "W_G2", "beta_use", "beta_ign"):
        assert abs(keras.ops.convert_to_numpy(getattr(layer, name)).std() - 1) < 0.15, name
    for name in ("B_A", "B_F2", "B_G2", "B_S"):
        assert not np.any(keras.ops.convert_to_numpy(getattr(layer, name))), name


def test_layer_contract():
    x = np.random.default_rng(8).normal(size=(3, 5, 4)).astype("float32")
    run_layer_test(
        VectorRouting, {"n_inp": 5, "n_out": 3, "d_inp": 4, "d_out": 2}, x, expected_output_shapes=[(3, 3, 2)]
    )


def test_variable_number_of_inputs_and_keras_round_trip():
    inputs = keras.Input((None, 4))
    model = keras.Model(inputs, VectorRouting(None, 3, 4, 2, n_iters=3)(inputs))
    for n in (2, 9):
        x = np.random.default_rng(n).normal(size=(3, n, 4)).astype("float32")
        assert tuple(model(x).shape) == (3, 3, 2)
    run_model_saving_test(model, x)


@pytest.mark.parametrize(
    "kwargs, shape, message",
    [
        ({}, (2, 5), r"VectorRouting.*inputs.*rank 3.*\(2, 5\)"),
        ({}, (2, 5, 3), r"VectorRouting.*inputs.*d_inp=4.*\(2, 5, 3\)"),
        ({}, (2, 6, 4), r"VectorRouting.*inputs.*n_inp=5.*\(2, 6, 4\)"),
        ({"n_iters": 0}, None, r"VectorRouting.*n_iters.*>= 1.*0"),
        ({"n_out": 1}, None, r"VectorRouting.*n_out.*>= 2.*1"),
        ({"n_inp": 0}, None, r"VectorRouting.*n_inp.*>= 1.*0"),
        ({"normalize": "yes"}, None, r"VectorRouting.*normalize.*True or False.*yes"),
    ],
)
def test_errors_name_the_layer_argument_and_values(kwargs, shape, message):
    config = {"n_inp": 5, "n_out": 3, "d_inp": 4, "d_out": 2, **kwargs}
    with pytest.raises((ValueError, TypeError), match=message):
        VectorRouting(**config)(np.zeros(shape or (2, 5, 4), "float32"))


def test_ignore_mask_errors_name_the_expected_shape_and_dtype():
    layer = VectorRouting(5, 3, 4, 2)
    x = np.zeros((2, 5, 4), "float32")
    with pytest.raises(ValueError, match=r"VectorRouting.*ignore_mask.*n_inp=5, n_out=3.*\(5, 2\)"):
        layer(x, ignore_mask=np.zeros((5, 2), bool))
    with pytest.raises(ValueError, match=r"VectorRouting.*ignore_mask.*boolean.*float32"):
        layer(x, ignore_mask=np.zeros((5, 3), "float32"))


@pytest.mark.parametrize("policy", ["float32", "mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("normalize", [True, False])
def test_finite_from_finite_inputs_in_every_precision(policy, normalize):
    layer = VectorRouting(None, 3, 4, 5, n_iters=3, normalize=normalize, dtype=policy)
    compute = keras.mixed_precision.DTypePolicy(policy).compute_dtype
    largest = {"float32": 3e38, "float16": 65504.0, "bfloat16": 3.3e38}[compute]
    rng = np.random.default_rng(9)
    ordinary = rng.normal(size=(2, 6, 4))
    for x in (np.zeros((2, 6, 4)), ordinary, ordinary * 1e3, np.sign(ordinary) * largest):
        out = layer(keras.ops.cast(x, compute))
        assert keras.backend.standardize_dtype(out.dtype) == compute
        assert_finite(out, f"{policy} outputs for max |x| = {np.abs(x).max():g}")
    loss_weights = rng.normal(size=(2, 3, 5)).astype("float32")
    gradient = input_gradient(
        lambda v: keras.ops.multiply(keras.ops.cast(layer(v), "float32"), loss_weights),
        keras.ops.cast(ordinary, compute),
    )
    assert_finite(gradient, f"{policy} input gradient")


def test_model_with_vector_routing_builds_trains():
    rng = np.random.default_rng(10)
    x = rng.normal(size=(64, 8, 6)).astype("float32")
    y = (x[:, :, 0].sum(-1) > 0).astype("int32")
    inputs = keras.Input((8, 6))
    routed = VectorRouting(8, 2, 6, 4)(inputs)
    model = keras.Model(inputs, keras.layers.Dense(2)(keras.layers.Flatten()(routed)))
    model.compile(keras.optimizers.Adam(1e-2), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    losses = [float(model.train_on_batch(x, y)) for _ in range(8)]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0], losses
