import keras
import numpy as np
import pytest

from keras_capsules.layers import ConcurrentRouting, ConvCaps, FcCaps, PrimaryCaps
from keras_capsules.routing.inverted_dot_product import InvertedDotProductRouter
from keras_capsules.testing import assert_finite, run_layer_test
from keras_capsules.testing.tiers import large


def to_np(x):
    return np.asarray(keras.ops.convert_to_numpy(x), dtype="float64")


# ---- NumPy reference: apple's CapsuleCONV / CapsuleFC step and CapsModel.forward schedules -------------


def np_layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * gamma + beta


def np_idpa(votes, parents, gamma, beta):
    """One inverted-attention step over the last-but-one axis (parents); votes (..., in, out, d)."""
    if parents is None:
        r = np.full(votes.shape[:-1], 1.0 / votes.shape[-2])
    else:
        logits = np.einsum("...iod,...od->...io", votes, parents) / np.sqrt(votes.shape[-1])
        r = np.exp(logits - logits.max(-1, keepdims=True))
        r /= r.sum(-1, keepdims=True)
    return np_layer_norm(np.einsum("...io,...iod->...od", r, votes), gamma, beta), r


def np_conv_votes(poses, kernel, k, s):
    """poses (b, H, W, T, p*p); kernel (k*k*T, O, p, p) in (kernel row, kernel col, type) order."""
    b, height, width, types, dd = poses.shape
    p = int(np.sqrt(dd))
    out_h, out_w = (height - k) // s + 1, (width - k) // s + 1
    m = poses.reshape(b, height, width, types, p, p)
    w = kernel.reshape(k, k, types, -1, p, p)
    votes = np.zeros((b, out_h, out_w, k, k, types, w.shape[3], p, p))
    for oh in range(out_h):
        for ow in range(out_w):
            for kr in range(k):
                for kc in range(k):
                    votes[:, oh, ow, kr, kc] = np.einsum("btxy,toyz->btoxz", m[:, oh * s + kr, ow * s + kc], w[kr, kc])
    return votes.reshape(b, out_h, out_w, k * k * types, w.shape[3], dd)


def np_fc_votes(poses, kernel):
    """poses (b, H, W, T, p*p) or (b, N, p*p), flattened (row, column, type); kernel (N, O, p, p)."""
    b, dd = poses.shape[0], poses.shape[-1]
    p = int(np.sqrt(dd))
    m = poses.reshape(b, -1, p, p)
    return np.einsum("bixy,ioyz->bioxz", m, kernel).reshape(b, m.shape[1], kernel.shape[1], dd)


def layer_params(layer):
    return to_np(layer.vote_transform.kernel), to_np(layer.router.gamma), to_np(layer.router.beta)


def np_layer_step(layer, inputs, parents, k_s):
    kernel, gamma, beta = layer_params(layer)
    if k_s is None:
        return np_idpa(np_fc_votes(inputs, kernel), parents, gamma, beta)
    return np_idpa(np_conv_votes(inputs, kernel, *k_s), parents, gamma, beta)


def np_concurrent(layers, geometry, primary, t):
    """Procedure 2: a uniform sequential pass, then t-1 Jacobi sweeps over the previous sweep's values."""
    values = [primary]
    for layer, g in zip(layers, geometry):
        values.append(np_layer_step(layer, values[-1], None, g)[0])
    for _ in range(t - 1):
        values = [primary] + [
            np_layer_step(layer, values[i], values[i + 1], g)[0] for i, (layer, g) in enumerate(zip(layers, geometry))
        ]
    return values[-1]


def np_sequential(layers, geometry, primary, t):
    value = primary
    for layer, g in zip(layers, geometry):
        parents = None
        for _ in range(t):
            parents = np_layer_step(layer, value, parents, g)[0]
        value = parents
    return value


def tiny_stack(iterations=2, sequential=False):
    layers = [
        ConvCaps(3, kernel_size=3, strides=2, transform="matrix", router="inverted_dot_product", name="c1"),
        ConvCaps(2, kernel_size=2, strides=1, transform="matrix", router="inverted_dot_product", name="c2"),
        FcCaps(4, transform="matrix", router="inverted_dot_product", name="cls"),
    ]
    return ConcurrentRouting(layers, iterations=iterations, sequential=sequential), [(3, 2), (2, 1), None]


def randomize_layer_norms(stack, seed=0):
    rng = np.random.default_rng(seed)
    for layer in stack.capsule_layers:
        d = layer.router.gamma.shape[0]
        layer.router.gamma.assign((1 + 0.3 * rng.normal(size=d)).astype("float32"))
        layer.router.beta.assign((0.2 * rng.normal(size=d)).astype("float32"))


PRIMARY = np.random.default_rng(1).normal(size=(2, 7, 7, 2, 4)).astype("float32")


@pytest.mark.parametrize("iterations", [1, 2, 3, 4])
@pytest.mark.parametrize("sequential", [False, True])
def test_matches_numpy_schedules(iterations, sequential):
    stack, geometry = tiny_stack(iterations, sequential)
    stack.build(PRIMARY.shape)
    randomize_layer_norms(stack)
    poses, shares = stack(PRIMARY)
    reference = np_sequential if sequential else np_concurrent
    expected = reference(stack.capsule_layers, geometry, PRIMARY.astype("float64"), iterations)
    np.testing.assert_allclose(to_np(poses), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(to_np(shares).sum(-1), 1.0, rtol=1e-5)


# Full-vote routing steps per layer (bottom to top) of a 3-layer stack at t = 1..5, counted by hand:
# a layer's sweep output reaches the top output only through the sweeps after it, one layer up per
# sweep, so the final sweep routes only the top layer, the one before it the top two, ...
FULL_VOTE_STEPS = {1: [0, 0, 0], 2: [0, 0, 1], 3: [0, 1, 2], 4: [1, 2, 3], 5: [2, 3, 4]}


@pytest.mark.parametrize("iterations", sorted(FULL_VOTE_STEPS))
def test_computes_only_the_sweeps_that_reach_the_output(iterations, monkeypatch):
    stack, _ = tiny_stack(iterations)
    stack.build(PRIMARY.shape)
    calls = []
    original = InvertedDotProductRouter.call

    def spy(router, votes, *args, **kwargs):
        calls.append((router, kwargs.get("initial_poses") is not None))
        return original(router, votes, *args, **kwargs)

    monkeypatch.setattr(InvertedDotProductRouter, "call", spy)
    poses, _ = stack(PRIMARY)
    routers = [layer.router for layer in stack.capsule_layers]
    assert [sum(r is router and full for r, full in calls) for router in routers] == FULL_VOTE_STEPS[iterations]
    calls.clear()
    every_layer = stack(PRIMARY, return_coupling=True)  # every layer's final coupling: every sweep computes every layer
    assert [sum(r is router for r, _ in calls) for router in routers] == [iterations - 1] * 3
    np.testing.assert_array_equal(to_np(poses), to_np(every_layer[0]))


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="counts the ops of a TensorFlow graph")
@large
def test_training_graph_grows_by_one_sweep_per_iteration():
    """Forward + gradient graph size at t = 3, 4, 5 on a 2-layer stack: once t > 2 layers, every
    iteration adds one sweep, so the increments are equal (a cost superlinear in t would grow them)."""
    import tensorflow as tf

    primary = tf.constant(PRIMARY[:, :5, :5])
    sizes = []
    for iterations in (3, 4, 5):
        layers = [
            ConvCaps(2, kernel_size=3, strides=2, transform="matrix", router="inverted_dot_product"),
            FcCaps(3, transform="matrix", router="inverted_dot_product"),
        ]
        stack = ConcurrentRouting(layers, iterations=iterations)
        stack.build(primary.shape)

        @tf.function
        def gradients(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(stack(x, training=False)[0])
            return tape.gradient(loss, stack.trainable_variables)

        graph = gradients.get_concrete_function(primary).graph.as_graph_def()
        sizes.append(len(graph.node) + sum(len(f.node_def) for f in graph.library.function))
    first, second = sizes[1] - sizes[0], sizes[2] - sizes[1]
    assert first > 0 and abs(second - first) <= 0.01 * first, sizes


def test_concurrent_and_sequential_differ_after_the_first_pass():
    a, _ = tiny_stack(2, False)
    a.build(PRIMARY.shape)
    b, _ = tiny_stack(2, True)
    b.build(PRIMARY.shape)
    for la, lb in zip(a.capsule_layers, b.capsule_layers):
        lb.set_weights(la.get_weights())
    assert not np.allclose(to_np(a(PRIMARY)[0]), to_np(b(PRIMARY)[0]), atol=1e-4)
    a1, _ = tiny_stack(1, False)
    a1.build(PRIMARY.shape)
    b1, _ = tiny_stack(1, True)
    b1.build(PRIMARY.shape)
    for la, lb in zip(a1.capsule_layers, b1.capsule_layers):
        lb.set_weights(la.get_weights())
    np.testing.assert_allclose(to_np(a1(PRIMARY)[0]), to_np(b1(PRIMARY)[0]), rtol=1e-6)


def test_sequential_equals_chaining_the_layers():
    stack, _ = tiny_stack(3, sequential=True)
    poses, _ = stack(PRIMARY)
    value = (PRIMARY, None)
    for layer in stack.capsule_layers:
        layer.router.iterations = 3  # standalone, a layer routes with its router's own iterations
        value = layer(value)
    np.testing.assert_allclose(to_np(poses), to_np(value[0]), rtol=1e-5, atol=1e-6)


def test_couplings_and_primary_activations():
    stack, _ = tiny_stack(2)
    grid = (PRIMARY, np.ones(PRIMARY.shape[:-1], "float32"))
    poses, shares, couplings = stack(grid, return_coupling=True)
    assert [tuple(c.shape) for c in couplings] == [(2 * 9, 18, 3), (2 * 4, 12, 2), (2, 8, 4)]
    for c in couplings:
        np.testing.assert_allclose(to_np(c).sum(-1), 1.0, rtol=1e-5)
    assert tuple(poses.shape) == (2, 4, 4) and tuple(shares.shape) == (2, 4)


@pytest.mark.parametrize("sequential", [False, True])
def test_routing_tensors_are_the_final_pass(sequential):
    stack, geometry = tiny_stack(2, sequential)
    stack.build(PRIMARY.shape)
    randomize_layer_norms(stack)
    primary = PRIMARY.astype("float64")
    # NumPy: every layer's (inputs, coupling) of the final pass of each schedule.
    if sequential:
        expected, value = [], primary
        for layer, g in zip(stack.capsule_layers, geometry):
            parents = np_layer_step(layer, value, None, g)[0]
            parents, coupling = np_layer_step(layer, value, parents, g)
            expected.append((value, coupling))
            value = parents
    else:
        values = [primary]
        for layer, g in zip(stack.capsule_layers, geometry):
            values.append(np_layer_step(layer, values[-1], None, g)[0])
        expected = [
            (values[i], np_layer_step(layer, values[i], values[i + 1], g)[1])
            for i, (layer, g) in enumerate(zip(stack.capsule_layers, geometry))
        ]
    tensors = stack.routing_tensors(PRIMARY)
    assert len(tensors) == 3 and "input_activations" not in tensors[0]  # bare primary poses in
    assert all(tuple(t["input_activations"].shape) == t["input_poses"].shape[:-1] for t in tensors[1:])
    for entry, (inputs, coupling) in zip(tensors, expected):
        np.testing.assert_allclose(to_np(entry["input_poses"]), inputs, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(
            to_np(entry["coupling"]), coupling.reshape(-1, *coupling.shape[-2:]), rtol=1e-4, atol=1e-5
        )
    _, top_shares, couplings = stack(PRIMARY, return_coupling=True)
    np.testing.assert_allclose(to_np(tensors[-1]["output_activations"]), to_np(top_shares), rtol=1e-6)
    with_acts = stack.routing_tensors((PRIMARY, np.ones(PRIMARY.shape[:-1], "float32")))
    assert tuple(with_acts[0]["input_activations"].shape) == PRIMARY.shape[:-1]


def test_other_routers_run_sequentially_only():
    layers = [ConvCaps(3, 6, kernel_size=3, router="dynamic"), FcCaps(2, 8, router="dynamic")]
    with pytest.raises(
        ValueError, match=r"ConcurrentRouting.*capsule_layers\[0\].*initial parent poses.*sequential=True"
    ):
        ConcurrentRouting(layers)
    stack = ConcurrentRouting(layers, iterations=2, sequential=True)
    poses, lengths = stack(np.random.default_rng(2).normal(size=(2, 5, 5, 2, 4)).astype("float32"))
    assert tuple(poses.shape) == (2, 2, 8)
    assert_finite([poses, lengths])


def test_layer_contract():
    stack, _ = tiny_stack(2)
    init = {
        "capsule_layers": [keras.saving.serialize_keras_object(layer) for layer in stack.capsule_layers],
        "iterations": 2,
    }
    poses = np.concatenate([PRIMARY, PRIMARY[:1]])  # a batch of 3
    grid = (poses, np.ones(poses.shape[:-1], "float32"))
    run_layer_test(ConcurrentRouting, init, grid, expected_output_shapes=[(3, 4, 4), (3, 4)])


def test_in_a_functional_model_with_primary_capsules():
    images = keras.Input((9, 9, 3))
    primary = PrimaryCaps(2, 4, kernel_size=3, activation="layer_norm", use_bias=False)(images)
    stack, _ = tiny_stack(2)
    model = keras.Model(images, stack(primary)[0])
    assert tuple(model.output.shape) == (None, 4, 4)
    out = model(np.random.default_rng(3).uniform(size=(2, 9, 9, 3)).astype("float32"))
    assert_finite(out)


def test_errors():
    with pytest.raises(ValueError, match="capsule_layers.*non-empty"):
        ConcurrentRouting([])
    with pytest.raises(TypeError, match=r"capsule_layers\[0\].*ConvCaps or FcCaps"):
        ConcurrentRouting([keras.layers.Dense(3)])
    with pytest.raises(ValueError, match="iterations"):
        ConcurrentRouting([FcCaps(2, router="inverted_dot_product", transform="matrix")], iterations=0)
