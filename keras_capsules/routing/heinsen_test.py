import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.routing import HeinsenRouter
from keras_capsules.testing import assert_routes_finitely, assert_routes_like, run_router_test


def np_heinsen_routing(votes, scores_in, beta_use, beta_ign, bias, iterations, model="gaussian", eps=1e-5):
    """Heinsen (2019), Algorithm 1, from the paper, on votes without their bias and child scores as logits."""
    sigmoid = lambda x: 1.0 / (1.0 + np.exp(-x))  # noqa: E731

    def softmax(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    v = votes + bias  # V_ij = mu_i W_ij + B_ij
    f_in = sigmoid(scores_in)[..., None]
    r = np.full(v.shape[:3], 1.0 / v.shape[2])
    a_out = dev = sig2 = None  # set by each M-step, read by the next E-step
    for t in range(iterations):
        if t > 0:
            if model == "gaussian":
                log_p = -(dev / (2 * sig2[:, None])).sum(-1) - np.log(np.sqrt(sig2)).sum(-1)[:, None]
            else:
                log_p = np.log(softmax(-dev.sum(-1)))
            r = softmax(np.log(sigmoid(a_out))[:, None] + log_p)
        d_use = f_in * r
        d_ign = f_in - d_use
        a_out = (beta_use * d_use).sum(1) - (beta_ign * d_ign).sum(1)
        over = 1.0 / (d_use.sum(1) + eps)
        mu = np.einsum("bij,bijd,bj->bjd", d_use, v, over)
        dev = (v - mu[:, None]) ** 2
        sig2 = np.einsum("bij,bijd,bj->bjd", d_use, dev, over) + eps
    return mu, sigmoid(a_out), r


def randomize(router, seed=0):
    rng = np.random.default_rng(seed)
    for weight in router.weights:
        weight.assign(rng.normal(size=weight.shape).astype("float32"))


def reference(router, votes, activations, model="gaussian"):
    beta_use = keras.ops.convert_to_numpy(router.beta_use).astype("float64")
    beta_ign = beta_use if router.single_beta else keras.ops.convert_to_numpy(router.beta_ign).astype("float64")
    bias = 0.0 if router.bias is None else keras.ops.convert_to_numpy(router.bias).astype("float64")
    acts = np.ones(votes.shape[:2]) if activations is None else np.clip(activations, 1e-12, 1 - 1e-12)
    scores_in = np.log(acts / (1 - acts))  # the paper's child scores: the activations' logits
    return np_heinsen_routing(votes, scores_in, beta_use, beta_ign, bias, router.iterations, model)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"iterations": 1},
        {"iterations": 3},
        {"iterations": 4, "share_children": True},
        {"iterations": 3, "single_beta": True, "vote_bias": False},
        {"iterations": 3, "probability_model": "soft_kmeans"},
    ],
)
def test_matches_numpy_reference(kwargs):
    rng = np.random.default_rng(1)
    votes = rng.normal(size=(3, 7, 4, 4)).astype("float32")
    activations = rng.uniform(0.05, 0.95, size=(3, 7)).astype("float32")
    router = HeinsenRouter(**kwargs)
    router.build(votes.shape)
    randomize(router)
    model = kwargs.get("probability_model", "gaussian")
    expected = reference(router, votes.astype("float64"), activations.astype("float64"), model)
    assert_routes_like(router(votes, activations, return_coupling=True), expected, rtol=1e-4, atol=1e-5)


def test_contract_numpy_reference_and_saving():
    rng = np.random.default_rng(2)
    votes = rng.normal(size=(3, 6, 3, 4)).astype("float32")
    activations = rng.uniform(size=(3, 6)).astype("float32")
    run_router_test(
        HeinsenRouter,
        {"iterations": 2},
        votes,
        activations,
        reference=lambda router, v, a: reference(router, v, a),
        initialize=randomize,
    )


def test_weights_zero_activations_and_padding_children():
    router = HeinsenRouter(share_children=True)
    votes = np.random.default_rng(3).normal(size=(2, 5, 3, 4)).astype("float32")
    poses, acts, coupling = router(votes, np.zeros((2, 5), "float32"), return_coupling=True)
    assert [tuple(w.shape) for w in router.weights] == [(1, 3), (1, 3), (1, 3, 4)]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(acts), 0.5)  # zero betas: score 0
    np.testing.assert_allclose(keras.ops.convert_to_numpy(poses), 0.0)  # no child uses a parent
    np.testing.assert_allclose(keras.ops.convert_to_numpy(coupling).sum(-1), 1.0, rtol=1e-6)
    # A child with activation 0 (the paper's score -inf, a padding token) changes nothing.
    padded = np.concatenate([votes, 1e3 * np.ones((2, 1, 3, 4), "float32")], axis=1)
    mask = np.concatenate([np.full((2, 5), 0.7, "float32"), np.zeros((2, 1), "float32")], axis=1)
    a, b = router(votes, mask[:, :5]), router(padded, mask)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(a[0]), keras.ops.convert_to_numpy(b[0]), rtol=1e-5)
    assert tuple(HeinsenRouter(single_beta=True, vote_bias=False)(votes)[0].shape) == (2, 3, 4)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("scale", [0.0, 1e4, 1e30])
def test_finite_for_zero_and_large_votes(dtype, scale):
    rng = np.random.default_rng(4)
    largest = 6e4 if dtype == "float16" else 1e38  # finite input in every dtype
    votes = keras.ops.cast(np.clip(rng.normal(size=(2, 6, 3, 4)) * scale, -largest, largest), dtype)
    activations = keras.ops.cast(rng.uniform(size=(2, 6)), dtype)
    # Gradients too, up to votes of 1e4: beyond, the true gradient (float32: 1.4e5 at +-6e4) is beyond float16.
    gradient_of = (lambda outputs: outputs[0] + outputs[1][..., None]) if scale <= 1e4 else None
    assert_routes_finitely(HeinsenRouter(dtype=dtype), votes, activations, gradient_of=gradient_of)


def test_registered_with_capabilities():
    assert isinstance(routing.get("heinsen"), HeinsenRouter)
    assert "heinsen" in routing.available(pose="matrix") and "heinsen" in routing.available(pose="vector")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"probability_model": "gauss"}, r"HeinsenRouter.*probability_model.*gaussian.*'gauss'"),
        ({"epsilon": 0.0}, r"HeinsenRouter.*epsilon.*positive.*0.0"),
        ({"share_children": 1}, r"HeinsenRouter.*share_children.*True or False.*1"),
        ({"iterations": 0}, r"HeinsenRouter.*iterations"),
    ],
)
def test_errors(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        HeinsenRouter(**kwargs)
    with pytest.raises(ValueError, match=r"HeinsenRouter.*votes.*in_caps"):
        HeinsenRouter().build((None, None, 3, 4))
