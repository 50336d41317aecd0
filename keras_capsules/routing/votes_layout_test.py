"""Routers that iterate in the parent-major layout take votes in it (``votes_layout="parent_major"``)."""

import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.layers import ConvCaps, FcCaps
from keras_capsules.routing.dynamic_test import np_dynamic_routing

PARENT_MAJOR = [
    "dynamic",
    "self_attention",
    "inverted_dot_product",
    "kernel",
    "lstm",
    "fm_agreement",
    "em",
    "variational_bayes",
]


def _votes(seed=0, shape=(2, 6, 3, 4)):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def test_routers_that_accept_the_parent_major_layout():
    accepting = sorted(name for name in routing.available() if routing.get(name).accepts_parent_major)
    assert accepting == sorted(PARENT_MAJOR)


def test_parent_major_dynamic_routing_matches_procedure_1():
    votes = _votes(1)
    router = routing.get("dynamic", iterations=3, use_bias=False)
    poses, _, coupling = router(np.transpose(votes, (0, 2, 1, 3)), votes_layout="parent_major", return_coupling=True)
    expected, expected_c = np_dynamic_routing(votes.astype("float64"), 3)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(poses), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(coupling), expected_c, rtol=1e-4, atol=1e-5
    )  # coupling in the contract layout


@pytest.mark.parametrize("name", PARENT_MAJOR)
def test_both_layouts_route_alike(name):
    """Each router's child-major path is checked against its NumPy reference in its own test file."""
    votes = _votes(2)
    acts = np.random.default_rng(3).uniform(size=votes.shape[:2]).astype("float32")
    router = routing.get(name, iterations=2 if routing.get(name).iterative else 1)
    child = router(votes, acts, return_coupling=True)
    parent = router(np.transpose(votes, (0, 2, 1, 3)), acts, votes_layout="parent_major", return_coupling=True)
    for a, b in zip(child, parent):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(b), keras.ops.convert_to_numpy(a), rtol=1e-5, atol=1e-6)


def test_a_router_without_the_parent_major_layout_refuses_it():
    class MeanRouter(routing.Router):
        """Routes by the mean vote: implements ``route`` only (the child-major contract layout)."""

        def route(self, votes, activations, training):
            poses = keras.ops.mean(votes, axis=1)
            return poses, keras.ops.ones(keras.ops.shape(poses)[:2]), keras.ops.ones(keras.ops.shape(votes)[:3])

    router = MeanRouter(iterations=1)
    assert not router.accepts_parent_major
    np.testing.assert_allclose(keras.ops.convert_to_numpy(router(_votes())[0]), _votes().mean(axis=1), rtol=1e-6)
    with pytest.raises(ValueError, match="votes_layout.*child_major.*parent_major"):
        router(_votes(), votes_layout="parent_major")


@pytest.mark.parametrize("layer", ["fc", "conv"])
def test_capsule_layers_route_with_parent_major_votes(layer):
    """FcCaps/ConvCaps with dynamic routing against NumPy: votes ``u_i W_ij`` of every receptive field, Procedure 1."""
    rng = np.random.default_rng(5)
    if layer == "fc":
        poses = rng.normal(size=(2, 7, 3)).astype("float32")
        caps = FcCaps(4, 5, router={"name": "dynamic", "use_bias": False}, routing_iterations=3)
        fields = poses[:, None]  # (batch, positions=1, in, in_dim)
    else:
        poses = rng.normal(size=(2, 4, 4, 2, 3)).astype("float32")
        caps = ConvCaps(
            4, 5, kernel_size=3, strides=1, router={"name": "dynamic", "use_bias": False}, routing_iterations=3
        )
        fields = np.stack(
            [poses[:, r : r + 3, c : c + 3].reshape(2, 18, 3) for r in range(2) for c in range(2)], axis=1
        )
    out = keras.ops.convert_to_numpy(caps(poses)[0])
    w = keras.ops.convert_to_numpy(caps.vote_transform.kernel)  # (in, out, in_dim, d)
    votes = np.einsum("bpid,iode->bpioe", fields.astype("float64"), w)
    expected, _ = np_dynamic_routing(votes.reshape((-1,) + votes.shape[2:]), 3)
    np.testing.assert_allclose(out.reshape(expected.shape), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("transform", ["vector", "matrix"])
def test_conv_caps_single_uniform_pass_from_vote_sums(transform):
    """ConvCaps + inverted dot-product attention, 1 iteration (routed from the votes' sums): NumPy votes of every field, one uniform pass, LayerNorm."""
    from keras_capsules.routing.inverted_dot_product_test import np_route

    rng = np.random.default_rng(12)
    poses = rng.normal(size=(2, 4, 4, 2, 16)).astype("float32")
    caps = ConvCaps(3, 16, kernel_size=3, router="inverted_dot_product", routing_iterations=1, transform=transform)
    out, shares = caps(poses)
    w = keras.ops.convert_to_numpy(caps.vote_transform.kernel).astype("float64")  # (in, out, ...)
    fields = np.stack(
        [poses[:, r : r + 3, c : c + 3].reshape(2, 18, 16) for r in range(2) for c in range(2)], axis=1
    ).astype("float64")
    if transform == "vector":
        votes = np.einsum("bpid,iode->bpioe", fields, w)
    else:
        votes = np.einsum("bpixy,ioyz->bpioxz", fields.reshape(2, 4, 18, 4, 4), w).reshape(2, 4, 18, 3, 16)
    gamma, beta = np.ones(16), np.zeros(16)
    expected, expected_shares, _ = np_route(votes.reshape((-1,) + votes.shape[2:]), gamma, beta, 1)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(out).reshape(expected.shape), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(shares).reshape(expected_shares.shape), expected_shares, rtol=1e-6
    )


@pytest.mark.parametrize("dtype", ["float16", "mixed_float16", "bfloat16"])
def test_vote_sums_do_not_overflow_low_precision(dtype):
    """FcCaps + inverted dot-product attention, 1 iteration, float16/bfloat16: 1152 children whose
    votes (about 640) fit float16 but whose sums over the children (about 7e5) do not. The sums are
    made in float32, as the routers sum votes: the result matches the float64 NumPy uniform pass
    (it was all zeros when the sums were made in float16)."""
    from keras_capsules.routing.inverted_dot_product_test import np_route

    caps = FcCaps(10, 16, router="inverted_dot_product", routing_iterations=1, dtype=dtype)
    caps.build((None, 1152, 8))
    w = np.abs(np.random.default_rng(4).normal(size=caps.vote_transform.kernel.shape))  # all-positive: no cancellation
    caps.vote_transform.kernel.assign(w.astype("float32"))
    poses = np.full((2, 1152, 8), 100.0)
    poses[1] *= np.random.default_rng(5).uniform(0.5, 1.0, size=(1152, 8))
    input_dtype = "bfloat16" if dtype == "bfloat16" else "float16"
    out, shares = caps(keras.ops.cast(poses, input_dtype))
    assert keras.backend.standardize_dtype(out.dtype) == input_dtype
    low = keras.ops.convert_to_numpy(keras.ops.cast(keras.ops.cast(poses, input_dtype), "float32")).astype("float64")
    kernel = keras.ops.convert_to_numpy(keras.ops.cast(caps.vote_transform.kernel, "float32")).astype(
        "float64"
    )  # as stored
    votes = np.einsum("bid,iode->bioe", low, kernel)
    assert np.abs(votes).max() < 65504 < np.abs(votes.sum(axis=1)).max()
    expected, expected_shares, _ = np_route(votes, np.ones(16), np.zeros(16), 1)
    tolerance = 0.05 if dtype == "bfloat16" else 0.02  # the outputs' own rounding (LayerNorm values of order 1)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(keras.ops.cast(out, "float32")), expected, atol=tolerance)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(keras.ops.cast(shares, "float32")), expected_shares, rtol=1e-2
    )
