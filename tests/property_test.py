"""Property-based checks (Hypothesis) over every public router, capsule layer and GLOM layer.

Property: for random small shapes (batch 0, 1 and 2 included), dtypes float32/float16/bfloat16 and
input magnitudes from 1e-3 up to 1e30 (float32) or the dtype's largest finite value, a layer returns
a finite result of the documented shape and dtype that satisfies an independent invariant of its
family (squash lengths in [0, 1) and monotone, couplings summing to 1 over the softmax axis,
convex combinations staying inside the inputs' range, NumPy references for the parameter-free
layers); and random invalid constructor arguments raise ``ValueError``/``TypeError`` naming the
argument. Never a NaN/Inf, a wrong shape or a raw backend error.

Layers with learned linear maps take magnitudes up to 1e30 in float32/bfloat16 but only up to
float16's max / 64 (~1e3) in float16: the exact product of such an input with the weights exceeds
float16's range, where Keras' own ``Dense``/``Conv2D`` give ``inf`` too.

Profiles (``HYPOTHESIS_PROFILE``): ``ci`` (default) runs 6 examples per test, the same ones on every
run (``derandomize``: a test run never fails on a case no earlier run drew), ``nightly`` 200 fresh
random examples per test, to search for new failing cases (run it before a release).
There are 68 Hypothesis tests (with their parametrisations) plus 4 plain ones. Counted with
``--hypothesis-show-statistics``: ``ci`` covers 402 cases (well under a minute with TensorFlow;
JAX compiles every new shape and needs a few minutes), ``nightly`` 9,395 (22 tests over small
invalid-argument spaces exhaust them before 200). Run the nightly profile with
``HYPOTHESIS_PROFILE=nightly pytest tests/property_test.py --hypothesis-show-statistics``.
"""

import math
import os

import keras
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from keras import ops

from keras_capsules import layers as L
from keras_capsules import routing
from keras_capsules.ops import safe_norm, squash, squash_efficient

_COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck), print_blob=True)
settings.register_profile("ci", max_examples=6, derandomize=True, **_COMMON)
settings.register_profile("nightly", max_examples=200, derandomize=False, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

DTYPES = ("float32", "float16", "bfloat16")
MAX = {"float32": 1e30, "float16": 65504.0, "bfloat16": 3.3e38}
LINEAR_MAX = {"float32": 1e30, "float16": 65504.0 / 64, "bfloat16": 1e30}
#: Tolerances of the invariants in each dtype (float16/bfloat16 outputs are rounded).
TOL = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 2e-2}


@st.composite
def arrays(draw, shape, dtype, limit):
    """``(numpy float64 reference, tensor of dtype)``: normal entries at a random magnitude up to ``limit``, or zeros."""
    seed = draw(st.integers(0, 2**31 - 1))
    exponent = draw(st.one_of(st.just(None), st.floats(-3.0, math.log10(limit))))
    rng = np.random.default_rng(seed)
    x = np.zeros(shape) if exponent is None else rng.normal(size=shape) * 10.0**exponent
    x = np.clip(x, -limit, limit)
    tensor = ops.cast(ops.convert_to_tensor(x.astype("float32")), dtype)
    return np.asarray(ops.convert_to_numpy(ops.cast(tensor, "float32")), dtype="float64"), tensor


def numpy_of(outputs):
    return [
        np.asarray(ops.convert_to_numpy(ops.cast(o, "float32")), dtype="float64") for o in keras.tree.flatten(outputs)
    ]


def check_outputs(outputs, shapes, dtype):
    """Every output finite, of the expected shape and dtype; returns them as float64 NumPy arrays."""
    flat = keras.tree.flatten(outputs)
    assert len(flat) == len(shapes)
    for tensor, shape in zip(flat, shapes):
        assert tuple(tensor.shape) == tuple(shape), (tuple(tensor.shape), shape)
        assert keras.backend.standardize_dtype(tensor.dtype) == dtype
    values = numpy_of(flat)
    for v in values:
        assert np.all(np.isfinite(v)), "non-finite output"
    return values


# ---------------------------------------------------------------------------------------------
# ops: squash and norms


@given(data=st.data(), dtype=st.sampled_from(DTYPES), fn=st.sampled_from(["squash", "squash_efficient", "escvm"]))
def test_squash_is_bounded_monotone_and_keeps_direction(data, dtype, fn):
    batch = data.draw(st.integers(0, 3))
    dim = data.draw(st.integers(1, 9))
    ref, x = data.draw(arrays((batch, dim), dtype, MAX[dtype]))
    f = {"squash": squash, "squash_efficient": squash_efficient, "escvm": lambda s: squash(s, form="escvm")}[fn]
    (out,) = check_outputs(f(x), [(batch, dim)], dtype)
    lengths = np.linalg.norm(out, axis=-1)
    assert np.all(lengths <= 1.0 + TOL[dtype])
    norms = np.linalg.norm(ref, axis=-1)
    big = norms > 1.0
    # Direction kept; length of a long vector close to 1 (both are the limit of |s| -> inf).
    cos = np.sum(out * ref, axis=-1)[big] / (lengths[big] * norms[big])
    assert np.all(cos > 1 - 10 * TOL[dtype])
    # Monotone: doubling the input never shortens the output.
    x32 = ops.cast(x, "float32")
    (single,), (doubled,) = numpy_of(f(x32)), numpy_of(f(x32 * 2.0))
    assert np.all(np.linalg.norm(doubled, axis=-1) >= np.linalg.norm(single, axis=-1) - 1e-6)


@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_safe_norm_matches_numpy_when_representable(data, dtype):
    dim = data.draw(st.integers(1, 9))
    limit = MAX[dtype] if dtype == "float32" else MAX[dtype] / 4  # the true norm must be representable
    ref, x = data.draw(arrays((data.draw(st.integers(0, 3)), dim), dtype, limit))
    (out,) = check_outputs(safe_norm(x), [ref.shape[:1]], dtype)
    np.testing.assert_allclose(out, np.sqrt(np.sum(np.square(ref), axis=-1) + 1e-7), rtol=10 * TOL[dtype], atol=1e-3)


# ---------------------------------------------------------------------------------------------
# routers

#: Axis of the coupling ``(batch, in_caps, out_caps)`` that each router's softmax normalises.
SOFTMAX_AXIS = {
    "dynamic": 2,
    "em": 2,
    "self_attention": 2,
    "inverted_dot_product": 2,
    "fm_agreement": 1,
    "kernel": 1,
    "lstm": 1,
    "variational_bayes": 2,
    "heinsen": 2,
    "self_routing": 2,
}


@pytest.mark.parametrize("name", routing.available())
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_router_outputs_are_finite_and_couplings_normalised(name, data, dtype):
    batch, in_caps = data.draw(st.integers(0, 2)), data.draw(st.integers(1, 4))
    out_caps, dim = data.draw(st.integers(1, 3)), data.draw(st.sampled_from([1, 4, 9]))
    ref, votes = data.draw(arrays((batch, in_caps, out_caps, dim), dtype, MAX[dtype]))
    router = routing.get(name)
    poses, acts, coupling = check_outputs(
        router(votes, return_coupling=True),
        [(batch, out_caps, dim), (batch, out_caps), (batch, in_caps, out_caps)],
        dtype,
    )
    tol = TOL[dtype]
    np.testing.assert_allclose(coupling.sum(axis=SOFTMAX_AXIS[name]), 1.0, atol=10 * tol)
    assert np.all(coupling >= 0)
    if name in ("dynamic", "self_attention"):  # squashed poses; the activation is their length
        np.testing.assert_allclose(acts, np.linalg.norm(poses, axis=-1), atol=10 * tol + 1e-3)
        assert np.all(acts <= 1 + tol)
    # sigmoid activations; poses are weighted means of the votes (EM clips votes to +-1e4 first, documented;
    # variational Bayes batch-normalises its poses; Heinsen routing adds a learned bias to each vote)
    if name in ("em", "kernel", "lstm", "variational_bayes", "heinsen", "self_routing"):
        assert np.all((acts >= 0) & (acts <= 1))
        if batch and name not in ("em", "variational_bayes", "heinsen"):
            low, high = ref.min(axis=1), ref.max(axis=1)
            slack = tol * np.maximum(np.abs(low), np.abs(high)) + 1e-6
            assert np.all(poses >= low - slack) and np.all(poses <= high + slack)
    if name == "inverted_dot_product":  # mass shares sum to 1 over parents
        np.testing.assert_allclose(acts.sum(axis=-1), 1.0, atol=10 * tol)
    if name == "fm_agreement":  # unit-length (or zero) poses; a_j in [-1/2, (n-1)/2]
        lengths = np.linalg.norm(poses, axis=-1)
        assert np.all(lengths <= 1 + 10 * tol)
        assert np.all(acts >= -0.5 - 10 * tol) and np.all(acts <= (in_caps - 1) / 2 + 10 * tol)


INVALID_INTS = [0, -1, 2.5, "3", True, None, np.float64(2.0)]


@pytest.mark.parametrize("name", routing.available())
@given(value=st.sampled_from(INVALID_INTS))
def test_router_rejects_invalid_iterations_by_name(name, value):
    with pytest.raises((ValueError, TypeError), match="iterations"):
        routing.get(name, iterations=value)


@given(value=st.sampled_from([0, 1, -3, 2.5, "4", True]))
def test_router_rejects_invalid_quantize_levels_by_name(value):
    with pytest.raises((ValueError, TypeError), match="quantize_levels"):
        routing.get("dynamic", quantize_levels=value)


def test_numpy_integer_sizes_are_accepted():
    layer = L.FcCaps(np.int64(3), np.int32(4), routing_iterations=np.int64(2))
    poses, _ = layer(np.ones((1, 5, 2), "float32"))
    assert tuple(poses.shape) == (1, 3, 4)
    assert isinstance(layer.get_config()["num_capsules"], int)


# ---------------------------------------------------------------------------------------------
# capsule layers


@pytest.mark.parametrize("router", routing.available())
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_fc_caps(router, data, dtype):
    batch, in_caps, in_dim = data.draw(st.integers(0, 2)), data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    out_caps, out_dim = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4))
    _, x = data.draw(arrays((batch, in_caps, in_dim), dtype, LINEAR_MAX[dtype]))
    layer = L.FcCaps(out_caps, out_dim, router=router, dtype=dtype)
    poses, acts = check_outputs(layer(x), [(batch, out_caps, out_dim), (batch, out_caps)], dtype)
    if router in ("dynamic", "self_attention"):
        assert np.all(np.linalg.norm(poses, axis=-1) <= 1 + TOL[dtype])


@given(data=st.data(), dtype=st.sampled_from(DTYPES), transform=st.sampled_from(["vector", "matrix"]))
def test_conv_caps_output_grid_follows_the_formula(data, dtype, transform):
    batch, size, types = data.draw(st.integers(0, 2)), data.draw(st.integers(1, 5)), data.draw(st.integers(1, 2))
    kernel, strides, padding = (
        data.draw(st.integers(1, 3)),
        data.draw(st.integers(1, 2)),
        data.draw(st.sampled_from(["valid", "same"])),
    )
    if padding == "valid" and size < kernel:
        size = kernel
    dim = 4
    _, x = data.draw(arrays((batch, size, size, types, dim), dtype, LINEAR_MAX[dtype]))
    layer = L.ConvCaps(
        2,
        None if transform == "matrix" else 3,
        kernel_size=kernel,
        strides=strides,
        padding=padding,
        transform=transform,
        dtype=dtype,
    )
    out = (size - kernel) // strides + 1 if padding == "valid" else -(-size // strides)
    out_dim = dim if transform == "matrix" else 3
    check_outputs(layer(x), [(batch, out, out, 2, out_dim), (batch, out, out, 2)], dtype)


@given(
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    activation=st.sampled_from(["squash", "squash_efficient", "layer_norm", "sigmoid", "linear"]),
)
def test_primary_caps(data, dtype, activation):
    batch, size, channels = data.draw(st.integers(0, 2)), data.draw(st.integers(3, 6)), data.draw(st.integers(1, 2))
    kernel, strides = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 2))
    _, x = data.draw(arrays((batch, size, size, channels), dtype, LINEAR_MAX[dtype]))
    pose_scale = data.draw(st.sampled_from([1.0, 1 / 32]))  # 1/32: the bias is a weight of its own
    layer = L.PrimaryCaps(
        2, 4, kernel_size=kernel, strides=strides, activation=activation, pose_scale=pose_scale, dtype=dtype
    )
    out = (size - kernel) // strides + 1
    poses, acts = check_outputs(layer(x), [(batch, out, out, 2, 4), (batch, out, out, 2)], dtype)
    if activation.startswith("squash"):
        assert np.all(acts <= 1 + TOL[dtype])
        np.testing.assert_allclose(acts, np.linalg.norm(poses, axis=-1), atol=10 * TOL[dtype] + 1e-3)


@given(
    data=st.data(), dtype=st.sampled_from(DTYPES), transform=st.sampled_from(["vector", "matrix"]), shared=st.booleans()
)
def test_vote_transforms(data, dtype, transform, shared):
    batch, in_caps = data.draw(st.integers(0, 2)), data.draw(st.integers(1, 3))
    dim = 4 if transform == "matrix" else data.draw(st.integers(1, 4))
    _, x = data.draw(arrays((batch, in_caps, dim), dtype, LINEAR_MAX[dtype]))
    layer = (
        L.VectorVotes(2, 3, shared=shared, dtype=dtype)
        if transform == "vector"
        else L.MatrixVotes(2, shared=shared, dtype=dtype)
    )
    check_outputs(layer(x), [(batch, in_caps, 2, 3 if transform == "vector" else dim)], dtype)


@given(data=st.data(), dtype=st.sampled_from(DTYPES), sequential=st.booleans())
def test_concurrent_routing(data, dtype, sequential):
    batch = data.draw(st.integers(0, 2))
    _, x = data.draw(arrays((batch, 3, 3, 2, 4), dtype, LINEAR_MAX[dtype]))
    stack = L.ConcurrentRouting(
        [
            L.ConvCaps(2, kernel_size=2, router="inverted_dot_product", transform="matrix", dtype=dtype),
            L.FcCaps(3, router="inverted_dot_product", transform="matrix", dtype=dtype),
        ],
        iterations=data.draw(st.integers(1, 3)),
        sequential=sequential,
        dtype=dtype,
    )
    _, shares = check_outputs(stack(x), [(batch, 3, 4), (batch, 3)], dtype)
    np.testing.assert_allclose(shares.sum(axis=-1), 1.0, atol=10 * TOL[dtype])


@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_length_and_squash_layers(data, dtype):
    batch, caps, dim = data.draw(st.integers(0, 2)), data.draw(st.integers(1, 4)), data.draw(st.integers(1, 8))
    ref, x = data.draw(arrays((batch, caps, dim), dtype, MAX[dtype] / 4 if dtype == "float16" else MAX[dtype]))
    (lengths,) = check_outputs(L.Length(dtype=dtype)(x), [(batch, caps)], dtype)
    np.testing.assert_allclose(lengths, np.linalg.norm(ref, axis=-1), rtol=10 * TOL[dtype], atol=1e-3)
    (squashed,) = check_outputs(L.Squash(dtype=dtype)(x), [(batch, caps, dim)], dtype)
    assert np.all(np.linalg.norm(squashed, axis=-1) <= 1 + TOL[dtype])


@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_mask_matches_numpy(data, dtype):
    batch, caps, dim = data.draw(st.integers(0, 3)), data.draw(st.integers(1, 5)), data.draw(st.integers(1, 4))
    ref, x = data.draw(arrays((batch, caps, dim), dtype, MAX[dtype]))
    labels = np.asarray(data.draw(st.lists(st.integers(0, caps - 1), min_size=batch, max_size=batch)), dtype="int32")
    (out,) = check_outputs(L.Mask(dtype=dtype)(x, labels), [(batch, caps * dim)], dtype)
    np.testing.assert_array_equal(out, (ref * np.eye(caps)[labels][..., None]).reshape(batch, caps * dim))
    bad = data.draw(st.sampled_from([-1, caps, caps + 7, 200]))
    if batch:
        with pytest.raises(ValueError, match="labels"):
            L.Mask()(x, np.where(np.arange(batch) == 0, bad, labels).astype("int32"))
    with pytest.raises(ValueError, match="top_k"):
        L.Mask(top_k=caps + 1)(x)


@given(data=st.data())
def test_margin_and_spread_losses_check_labels(data):
    from keras_capsules.losses import MarginLoss, SpreadLoss

    batch, classes = data.draw(st.integers(1, 4)), data.draw(st.integers(2, 6))
    labels = np.asarray(data.draw(st.lists(st.integers(0, classes - 1), min_size=batch, max_size=batch)))
    scores = np.random.default_rng(batch).uniform(size=(batch, classes)).astype("float32")
    # Hand-written reference of the margin loss (Sabour et al. eq. 4).
    t = np.eye(classes)[labels]
    expected = np.mean(
        np.sum(t * np.maximum(0, 0.9 - scores) ** 2 + 0.5 * (1 - t) * np.maximum(0, scores - 0.1) ** 2, axis=-1)
    )
    np.testing.assert_allclose(float(MarginLoss()(labels, scores)), expected, rtol=1e-5)
    for loss in (MarginLoss(), SpreadLoss()):
        bad = labels.copy()
        bad[0] = data.draw(st.sampled_from([-1, classes, 13, 200]))
        with pytest.raises(ValueError, match="y_true"):
            loss(bad, scores)
        with pytest.raises(ValueError, match="y_true"):
            loss(np.zeros((batch, classes + 1)), scores)


# ---------------------------------------------------------------------------------------------
# invalid constructor arguments of the capsule layers

INVALID_SIZES = [0, -2, 1.5, "8", True, None]
LAYER_SIZE_ARGS = [
    (L.FcCaps, dict(num_capsules=2, capsule_dim=4), ["num_capsules", "capsule_dim", "routing_iterations"]),
    (L.ConvCaps, dict(num_capsules=2, capsule_dim=4), ["num_capsules", "kernel_size", "strides"]),
    (L.PrimaryCaps, dict(num_capsules=2, capsule_dim=4), ["num_capsules", "capsule_dim", "kernel_size", "strides"]),
    (L.Mask, {}, ["top_k"]),
    (
        L.ConcurrentRouting,
        dict(capsule_layers=[L.FcCaps(2, router="inverted_dot_product", transform="matrix")]),
        ["iterations"],
    ),
    (L.ColumnMLP, dict(groups=2), ["groups", "depth", "hidden_multiplier"]),
    (L.GlomColumns, {}, ["levels", "iterations", "column_depth"]),
    (L.WindowAveragePooling, {}, ["window"]),
    (L.DissimilarityHead, {}, ["window"]),
    (L.PatchEmbedding, {}, ["patch_size"]),
    (L.ContrastiveHead, {}, ["projection_dim"]),
    (L.ClassifierHead, dict(classes=3), ["classes"]),
]


@pytest.mark.parametrize("cls,base,arguments", LAYER_SIZE_ARGS, ids=[c.__name__ for c, _, _ in LAYER_SIZE_ARGS])
@given(data=st.data())
def test_layers_reject_invalid_sizes_by_name(cls, base, arguments, data):
    argument = data.draw(st.sampled_from(arguments))
    value = data.draw(
        st.sampled_from(
            [
                v
                for v in INVALID_SIZES
                if not (v is None and argument in ("capsule_dim", "routing_iterations", "iterations"))
            ]
        )
    )
    with pytest.raises((ValueError, TypeError), match=argument):
        cls(**{**base, argument: value})


@given(value=st.sampled_from(["nope", 3, None, ["dynamic"]]))
def test_fc_caps_rejects_unknown_routers_by_name(value):
    with pytest.raises((ValueError, TypeError), match="router"):
        L.FcCaps(2, 4, router=value)


@given(extra=st.integers(1, 3))
def test_fc_caps_rejects_another_input_size_by_name(extra):
    layer = L.FcCaps(2, 4)
    layer(np.ones((1, 3, 2), "float32"))
    with pytest.raises(ValueError, match=r"FcCaps.*inputs.*\(batch, 3, 2\)"):
        layer(np.ones((1, 3 + extra, 2), "float32"))


# ---------------------------------------------------------------------------------------------
# GLOM layers


@given(data=st.data(), dtype=st.sampled_from(DTYPES), attend_self=st.booleans())
def test_consensus_attention_is_a_convex_combination(data, dtype, attend_self):
    batch, side, levels, dim = (
        data.draw(st.integers(0, 2)),
        data.draw(st.integers(1, 3)),
        data.draw(st.integers(1, 2)),
        data.draw(st.integers(1, 4)),
    )
    ref, x = data.draw(arrays((batch, side * side, levels, dim), dtype, MAX[dtype]))
    layer = L.ConsensusAttention(attend_self=attend_self, radius=data.draw(st.sampled_from([0, 1])), dtype=dtype)
    (out,) = check_outputs(layer(x), [x.shape], dtype)
    if batch:
        low, high = ref.min(axis=1, keepdims=True), ref.max(axis=1, keepdims=True)
        slack = 10 * TOL[dtype] * np.maximum(np.abs(low), np.abs(high)) + 1e-6
        assert np.all(out >= low - slack) and np.all(out <= high + slack)


@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_contrastive_agreement(data, dtype):
    batch, side, dim = data.draw(st.integers(0, 2)), data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4))
    # The true output pull - push reaches 2 max|f| (push: a mean of at most N inputs weighted by |s| <= 1),
    # so the inputs stay a margin below the largest float, where that output is representable.
    _, x = data.draw(arrays((batch, side * side, 2, dim), dtype, MAX[dtype] / 16))
    layer = L.ContrastiveAgreement(up_threshold=[0.0, -0.2], radius=data.draw(st.sampled_from([0, 1])), dtype=dtype)
    check_outputs(layer(x), [x.shape], dtype)


@given(data=st.data(), dtype=st.sampled_from(DTYPES), kind=st.sampled_from(["avg", "max", "dissimilarity"]))
def test_window_heads(data, dtype, kind):
    batch, window, cells, dim = (
        data.draw(st.integers(0, 2)),
        data.draw(st.integers(1, 2)),
        data.draw(st.integers(1, 2)),
        data.draw(st.integers(1, 3)),
    )
    side = window * cells
    limit = MAX[dtype] / (window * window)  # the dissimilarity head sums up to p*p weighted embeddings
    ref, x = data.draw(arrays((batch, side * side, dim), dtype, limit))
    cls = {"avg": L.WindowAveragePooling, "max": L.WindowMaxPooling, "dissimilarity": L.DissimilarityHead}[kind]
    (out,) = check_outputs(cls(window=window, dtype=dtype)(x), [(batch, cells * cells, dim)], dtype)
    windows = (
        ref.reshape(batch, cells, window, cells, window, dim)
        .transpose(0, 1, 3, 2, 4, 5)
        .reshape(batch, cells * cells, window * window, dim)
    )
    if kind == "avg":
        np.testing.assert_allclose(
            out,
            windows.mean(axis=2),
            rtol=10 * TOL[dtype],
            atol=1e-6 + 10 * TOL[dtype] * np.abs(windows).max(initial=0),
        )
    if kind == "max":
        np.testing.assert_allclose(out, windows.max(axis=2), rtol=TOL[dtype])


@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_patch_embedding_and_select_level_rearrange_exactly(data, dtype):
    batch, r, cells, channels = (
        data.draw(st.integers(0, 2)),
        data.draw(st.integers(1, 2)),
        data.draw(st.integers(1, 2)),
        data.draw(st.integers(1, 3)),
    )
    ref, x = data.draw(arrays((batch, r * cells, r * cells, channels), dtype, MAX[dtype]))
    (out,) = check_outputs(L.PatchEmbedding(r, dtype=dtype)(x), [(batch, cells * cells, r * r * channels)], dtype)
    expected = (
        ref.reshape(batch, cells, r, cells, r, channels)
        .transpose(0, 1, 3, 5, 2, 4)
        .reshape(batch, cells * cells, r * r * channels)
    )
    np.testing.assert_array_equal(out, expected)
    level = data.draw(st.integers(-2, 1))
    levels = ref.reshape(batch, (r * cells) ** 2, 1, channels).repeat(2, axis=2)
    (picked,) = check_outputs(
        L.SelectLevel(level, dtype=dtype)(ops.cast(levels, dtype)), [(batch, levels.shape[1], channels)], dtype
    )
    np.testing.assert_array_equal(picked, levels[:, :, level])


@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_glom_columns_and_column_mlp(data, dtype):
    batch, side, dim, levels = (
        data.draw(st.integers(0, 2)),
        data.draw(st.integers(1, 2)),
        data.draw(st.integers(1, 4)),
        data.draw(st.integers(1, 3)),
    )
    # Learned column MLPs: inputs bounded like every other learned linear map (see the module docstring).
    _, tokens = data.draw(arrays((batch, side * side, dim), dtype, LINEAR_MAX[dtype]))
    columns = L.GlomColumns(levels=levels, iterations=2, column_depth=2, agreement_radius=0, dtype=dtype)
    check_outputs(columns(tokens), [(batch, side * side, levels, dim)], dtype)
    _, x = data.draw(arrays((batch, side * side, 2, dim), dtype, LINEAR_MAX[dtype]))
    check_outputs(L.ColumnMLP(2, depth=2, dtype=dtype)(x), [x.shape], dtype)


@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_glom_input_and_output_heads(data, dtype):
    batch, size = data.draw(st.integers(0, 2)), data.draw(st.integers(1, 5))
    _, images = data.draw(arrays((batch, size, size, 1), dtype, 1e15 if dtype != "float16" else 10.0))
    side = -(-(-(-size // 2)) // 2)
    check_outputs(L.ConvTokenizer(4, dtype=dtype)(images), [(batch, side, side, 4)], dtype)
    token_values, tokens = data.draw(arrays((batch, 2, 3), dtype, MAX[dtype]))
    (projection,) = check_outputs(L.ContrastiveHead(5, dropout=0.0, dtype=dtype)(tokens), [(batch, 5)], dtype)
    norms = np.linalg.norm(projection, axis=-1)  # unit length (only all-zero tokens give the zero projection)
    assert np.all((np.abs(norms - 1.0) < 10 * TOL[dtype]) | ((norms == 0) & np.all(token_values == 0, axis=(1, 2))))
    _, features = data.draw(arrays((batch, 3), dtype, LINEAR_MAX[dtype] / 1e3))
    check_outputs(L.ClassifierHead(4, dtype=dtype)(features), [(batch, 4)], dtype)


# ---------------------------------------------------------------------------------------------
# integer inputs: the same result as the same values given as floats

INTEGER_CASES = [
    (lambda: L.FcCaps(3, 4), (2, 5, 3)),
    (lambda: L.ConvCaps(2, 4, kernel_size=2), (2, 3, 3, 2, 4)),
    (lambda: L.PrimaryCaps(2, 4, kernel_size=2), (2, 4, 4, 2)),
    (lambda: L.VectorVotes(2, 3), (2, 3, 4)),
    (lambda: L.MatrixVotes(2), (2, 3, 4)),
    (lambda: L.Squash(), (2, 3, 4)),
    (lambda: L.Length(), (2, 3, 4)),
    (lambda: L.Mask(), (2, 3, 4)),
    (lambda: L.ConsensusAttention(), (2, 4, 2, 3)),
    (lambda: L.ContrastiveAgreement(radius=0), (2, 4, 3)),
    (lambda: L.DissimilarityHead(window=2), (2, 4, 3)),
    (lambda: L.WindowAveragePooling(window=2), (2, 4, 3)),
    (lambda: L.ColumnMLP(2, depth=2), (2, 4, 2, 3)),
    (lambda: L.GlomColumns(levels=2, iterations=1, column_depth=2, agreement_radius=0), (2, 4, 3)),
    (lambda: L.ConvTokenizer(4), (2, 4, 4, 1)),
    (lambda: L.ContrastiveHead(3, dropout=0.0), (2, 2, 3)),
    (lambda: L.ClassifierHead(3), (2, 3)),
]


@pytest.mark.parametrize("make,shape", INTEGER_CASES, ids=[f"case{i}" for i in range(len(INTEGER_CASES))])
@given(seed=st.integers(0, 2**31 - 1))
def test_integer_inputs_are_cast_to_the_compute_dtype(make, shape, seed):
    ints = np.random.default_rng(seed).integers(-3, 4, size=shape).astype("int32")
    layer = make()
    from_floats = numpy_of(layer(ints.astype("float32")))
    from_ints = layer(ints)
    for tensor in keras.tree.flatten(from_ints):
        assert keras.backend.standardize_dtype(tensor.dtype) == "float32"
    for a, b in zip(from_floats, numpy_of(from_ints)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["dynamic", "self_attention", "lstm"])
def test_huge_votes_route_like_their_limit(name):
    # Votes beyond 1e15 are scaled down per example before the agreements: 1e20 and 1e30 votes in the
    # same directions route identically (the limit), with squashed lengths in [0, 1], never NaN or 0.
    router = routing.get(name)
    votes = np.random.default_rng(3).normal(size=(2, 5, 3, 4)).astype("float32")
    at_1e20 = [keras.ops.convert_to_numpy(o) for o in router(votes * 1e20, return_coupling=True)]
    at_1e30 = [keras.ops.convert_to_numpy(o) for o in router(votes * 1e30, return_coupling=True)]
    np.testing.assert_allclose(at_1e20[2], at_1e30[2], rtol=1e-5, atol=1e-6)  # couplings
    assert np.all(np.isfinite(at_1e30[0])) and np.all(np.isfinite(at_1e30[1]))
    if name == "lstm":  # poses are coupling-weighted sums of the unscaled votes
        np.testing.assert_allclose(
            at_1e30[0], np.einsum("bio,biod->bod", at_1e30[2], votes.astype("float64") * 1e30), rtol=1e-4
        )
    else:
        lengths = np.linalg.norm(at_1e30[0], axis=-1)
        assert np.all(lengths <= 1.0 + 1e-6) and np.all(lengths.max(axis=-1) > 0.999)
