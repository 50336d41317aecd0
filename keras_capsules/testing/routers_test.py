"""The router checks fail where a router breaks the contract, and name what broke."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_capsules import routing
from keras_capsules.ops import capsule_length
from keras_capsules.testing import assert_routes_finitely, assert_routes_like, run_router_test

NAME = "testing_mean_vote"


class MeanVote(routing.Router):
    """Each parent's pose is the mean of its votes (``c_ij = 1 / in_caps``); activations are the pose lengths."""

    def route(self, votes, activations, training):
        coupling = ops.ones_like(votes[..., 0]) / votes.shape[1]  # (batch, in, out)
        poses = ops.einsum("bij,bijd->bjd", coupling, votes)
        return poses, capsule_length(poses), coupling


class NotANumber(MeanVote):
    """Every pose is NaN."""

    def route(self, votes, activations, training):
        poses, lengths, coupling = super().route(votes, activations, training)
        return poses * np.float32("nan"), lengths, coupling


@pytest.fixture(scope="module", autouse=True)
def registered():
    """``MeanVote`` registered for this module's tests only."""
    routing.register_router(NAME)(MeanVote)
    yield
    assert routing.unregister_router(NAME) is MeanVote


def _votes(seed=0, shape=(3, 5, 2, 4)):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def _mean_vote(router, votes, activations):
    poses = votes.mean(axis=1)
    return poses, np.linalg.norm(poses, axis=-1), 1 / votes.shape[1]


def test_run_router_test_passes_a_router_that_keeps_the_contract():
    router = run_router_test(MeanVote, {}, _votes(), reference=_mean_vote, rtol=1e-6, atol=1e-6)
    assert isinstance(router, MeanVote) and router.built


def test_run_router_test_fails_on_a_reference_the_router_does_not_match():
    def sums(router, votes, activations):
        return (votes.sum(axis=1),)

    with pytest.raises(AssertionError, match="poses"):
        run_router_test(MeanVote, {}, _votes(), reference=sums, dtypes=(), run_saving=False)


def test_assert_routes_like_names_the_output_that_differs_and_skips_none():
    outputs = MeanVote()(_votes(), return_coupling=True)
    expected = list(_mean_vote(None, _votes().astype("float64"), None))
    assert_routes_like(outputs, expected, rtol=1e-6, atol=(1e-6, 1e-6, 0))
    assert_routes_like(outputs, (None, None, 0.2), rtol=1e-6, atol=0)  # five children: c = 1/5
    with pytest.raises(AssertionError, match="coupling"):
        assert_routes_like(outputs, (None, None, 0.25), rtol=1e-6, atol=0)
    with pytest.raises(AssertionError, match="2 tolerances for 3 expected outputs"):
        assert_routes_like(outputs, expected, atol=(1e-6, 1e-6))


def test_assert_routes_finitely_fails_on_nan_and_checks_the_dtype():
    votes = keras.ops.cast(_votes(), "float16")
    poses, _, _ = assert_routes_finitely(MeanVote(dtype="float16"), votes, gradient_of=lambda outputs: outputs[0])
    assert keras.backend.standardize_dtype(poses.dtype) == "float16"
    with pytest.raises(AssertionError, match=r"outputs\[0\] has non-finite values"):
        assert_routes_finitely(NotANumber(), _votes())
