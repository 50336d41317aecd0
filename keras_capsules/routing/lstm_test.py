import keras
import numpy as np
import pytest

from keras_capsules.routing import LSTMRouter
from keras_capsules.testing import (
    as_float64,
    assert_registry_round_trip,
    assert_routes_finitely,
    assert_routes_like,
    assert_training_vote_gradient,
    run_router_test,
)

SHAPE = (3, 6, 4, 5)  # (batch, in_caps, out_caps, dim)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_mlp(layers, head, x, final):
    for kernel, bias in layers:
        x = np.maximum(x @ kernel + bias, 0.0)
    x = x @ head[0] + head[1]
    return sigmoid(x) if final == "sigmoid" else x


def weights_of(router):
    def dense(layer):
        return as_float64(layer.kernel), as_float64(layer.bias)

    return dict(
        W=as_float64(router.lstm_kernel),
        U=as_float64(router.lstm_recurrent_kernel),
        b=as_float64(router.lstm_bias),
        compat=[dense(l) for l in router.compatibility_mlp],
        compat_head=dense(router.compatibility_head),
        act=[dense(l) for l in router.activation_mlp],
        act_head=dense(router.activation_head),
    )


def np_lstm_routing(votes, acts, w, iterations, state_assignment="code", activation="sigmoid"):
    """Connectionist routing of the inner-consensus paper (docs/reference/routers.md#lstm-routing): x_i = [mu, a_i, v_i, c_i] into an LSTM cell."""
    b, n, o, d = votes.shape
    units = w["U"].shape[0]
    c = np.full((b, n, o), 1.0 / n)
    mu = (c[..., None] * votes).sum(1)
    cell = np.zeros((b, n, o, units))
    hidden = np.zeros((b, n, o, units))
    for _ in range(iterations):
        x = np.concatenate(
            [
                np.broadcast_to(mu[:, None], votes.shape),
                np.broadcast_to(acts[:, :, None, None], (b, n, o, 1)),
                votes,
                c[..., None],
            ],
            axis=-1,
        )
        z = x @ w["W"] + hidden @ w["U"] + w["b"]
        i, f, g, out = np.split(z, 4, axis=-1)
        cell = sigmoid(f) * cell + sigmoid(i) * np.tanh(g)
        hidden = sigmoid(out) * np.tanh(cell)
        features = cell if state_assignment == "code" else hidden
        logits = np_mlp(w["compat"], w["compat_head"], features, None)[..., 0]
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        c = e / e.sum(axis=1, keepdims=True)
        mu = (c[..., None] * votes).sum(1)
    summary = hidden if state_assignment == "code" else cell
    pooled = (c[..., None] * summary).sum(1)
    return mu, np_mlp(w["act"], w["act_head"], pooled, activation)[..., 0], c


def data(seed=0, shape=SHAPE):
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape).astype("float32"), rng.uniform(size=shape[:2]).astype("float32")


def randomise_biases(router, seed):
    rng = np.random.default_rng(seed)
    for weight in router.weights:
        if "bias" in weight.name:
            weight.assign((rng.normal(size=weight.shape) * 0.3).astype("float32"))


@pytest.mark.parametrize("iterations", [1, 2, 3])
@pytest.mark.parametrize("state_assignment", ["code", "paper"])
def test_matches_numpy_reference(iterations, state_assignment):
    votes, acts = data(1)
    router = LSTMRouter(
        iterations=iterations,
        units=6,
        compatibility_units=[7, 5],
        activation_units=[4],
        state_assignment=state_assignment,
    )
    router(votes, acts)
    randomise_biases(router, iterations)
    expected = np_lstm_routing(
        votes.astype("float64"), acts.astype("float64"), weights_of(router), iterations, state_assignment
    )
    assert_routes_like(router(votes, acts, return_coupling=True), expected, atol=(1e-5, 1e-5, 1e-6))


def test_training_gradient_matches_numpy_reference():
    """Training rematerialises each LSTM step: vote gradients equal to the reference's finite differences."""
    votes, acts = data(4, shape=(2, 5, 3, 4))
    router = LSTMRouter(iterations=3, units=6, compatibility_units=[7], activation_units=[4])
    router(votes, acts)
    randomise_biases(router, 9)
    w = weights_of(router)
    assert_training_vote_gradient(router, lambda v: np_lstm_routing(v, acts.astype("float64"), w, 3)[:2], votes, acts)


def test_linear_activation_and_state_assignments_differ():
    votes, acts = data(2)
    router = LSTMRouter(activation="linear", units=8)
    _, out = outputs = router(votes, acts)
    _, expected, _ = np_lstm_routing(
        votes.astype("float64"), acts.astype("float64"), weights_of(router), 3, activation="linear"
    )
    assert_routes_like(outputs, (None, expected))
    paper = LSTMRouter(activation="linear", units=8, state_assignment="paper")
    paper(votes, acts)
    for source, target in zip(router.weights, paper.weights):
        target.assign(source)
    assert not np.allclose(as_float64(paper(votes, acts)[1]), as_float64(out))


def test_coupling_sums_to_one_over_inputs_and_parameter_count():
    votes, acts = data(3, shape=(2, 7, 3, 16))
    router = LSTMRouter(compatibility_units=[32, 32], activation_units=[64, 64])
    _, out, coupling = router(votes, acts, return_coupling=True)
    np.testing.assert_allclose(as_float64(coupling).sum(axis=1), 1.0, rtol=1e-5)
    assert np.all((as_float64(out) > 0) & (as_float64(out) < 1))
    # LSTM 4*16*(34+16+1) = 3,264; compatibility 16-32-32-1 = 1,633; activation 16-64-64-1 = 5,313
    assert sum(int(np.prod(w.shape)) for w in router.trainable_weights) == 3264 + 1633 + 5313
    np.testing.assert_allclose(as_float64(router.lstm_bias), [0] * 16 + [1] * 16 + [0] * 32)


def test_state_is_carried_across_iterations():
    votes, acts = data(4)
    one = LSTMRouter(iterations=1)
    two = LSTMRouter(iterations=2)
    one(votes, acts)
    two(votes, acts)
    for source, target in zip(one.weights, two.weights):
        target.assign(source)
    assert not np.allclose(as_float64(one(votes, acts)[0]), as_float64(two(votes, acts)[0]))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("magnitude", ["zero", "unit", "huge"])
def test_finite_forward_and_gradient(dtype, magnitude):
    huge = 6e4 if dtype == "float16" else 1e30
    scale = {"zero": 0.0, "unit": 1.0, "huge": huge}[magnitude]
    rng = np.random.default_rng(5)
    votes = keras.ops.cast(rng.uniform(-1, 1, size=SHAPE) * scale, dtype)
    acts = keras.ops.cast(rng.uniform(size=SHAPE[:2]) * (scale > 0), dtype)
    router = LSTMRouter(compatibility_units=[8], activation_units=[8], dtype=dtype)
    assert_routes_finitely(router, votes, acts, gradient_of=lambda outputs: outputs[1])


def test_in_fc_capsules_without_activations():
    from keras_capsules.layers import FcCaps

    poses = np.random.default_rng(6).normal(size=(2, 2, 2, 3, 16)).astype("float32")
    out_poses, out_acts = FcCaps(4, router={"name": "lstm", "activation": "linear"}, transform="matrix")(poses)
    assert tuple(out_poses.shape) == (2, 4, 16) and tuple(out_acts.shape) == (2, 4)


def test_router_contract():
    """Float16/bfloat16 are checked over three magnitudes by test_finite_forward_and_gradient."""
    votes, acts = data(7, shape=(4, 5, 3, 4))

    def reference(router, votes, activations):
        return np_lstm_routing(votes, activations, weights_of(router), 3)

    def initialize(router):
        randomise_biases(router, 7)

    init = {"units": 4, "compatibility_units": [3], "activation_units": [2]}
    run_router_test(LSTMRouter, init, votes, acts, reference, initialize, atol=(1e-5, 1e-5, 1e-6), dtypes=())


def test_registry_round_trip_of_the_papers_widths():
    kwargs = {"compatibility_units": [64, 64], "activation_units": [124, 124], "state_assignment": "paper"}
    assert assert_registry_round_trip("lstm", **kwargs).compatibility_units == (64, 64)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"units": 0}, ValueError, "units"),
        ({"compatibility_units": "64"}, TypeError, "compatibility_units"),
        ({"activation_units": [0]}, ValueError, "activation_units"),
        ({"activation": "tanh"}, ValueError, "activation"),
        ({"state_assignment": "hidden"}, ValueError, "state_assignment"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        LSTMRouter(**kwargs)
