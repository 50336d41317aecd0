"""The router registry: capability filters, registration checks and ``unregister_router``."""

import keras
import numpy as np
import pytest

from keras_capsules import routing

#: The library's routers, and what each documents it can do (a router added to the library is not listed
#: here: the facts below are checked on these routers only).
BUILT_IN = ["dynamic", "em", "fm_agreement", "inverted_dot_product", "kernel", "lstm", "self_attention"]


def _built_in(names):
    return [name for name in names if name in BUILT_IN]


def test_available_filters_the_built_in_routers_by_the_capabilities_their_pages_document():
    assert routing.available() == sorted(routing.available()) and set(BUILT_IN) <= set(routing.available())
    assert (
        _built_in(routing.available(pose="vector")) == BUILT_IN
        and _built_in(routing.available(pose="matrix")) == BUILT_IN
    )
    assert _built_in(routing.available(iterative=False)) == ["fm_agreement", "self_attention"]  # single pass
    assert _built_in(routing.available(iterative=True)) == ["dynamic", "em", "inverted_dot_product", "kernel", "lstm"]
    assert _built_in(routing.available(initial_poses=True)) == ["inverted_dot_product"]  # concurrent routing
    assert _built_in(routing.available(child_grid=True)) == ["em"]  # EM across positions
    assert _built_in(routing.available(pose="matrix", iterative=True, initial_poses=False)) == [
        "dynamic",
        "em",
        "kernel",
        "lstm",
    ]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"pose": "cube"},
            r"routing.available: argument `pose` expected None or one of \('vector', 'matrix'\), received 'cube'",
        ),
        ({"iterative": "yes"}, r"routing.available: argument `iterative` expected None, True or False, received 'yes'"),
        ({"initial_poses": 1}, r"argument `initial_poses` expected None, True or False, received 1"),
    ],
)
def test_available_refuses_bad_filters_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        routing.available(**kwargs)


def test_available_refuses_an_unknown_capability():
    with pytest.raises(TypeError, match="colour"):
        routing.available(colour="red")


class _Mean(routing.Router):
    def route(self, votes, activations, training):
        raise AssertionError("not called")


def test_unregister_removes_a_name_that_can_then_be_registered_again():
    routing.register_router("registry_test_mean")(_Mean)
    try:
        assert "registry_test_mean" in routing.available() and isinstance(routing.get("registry_test_mean"), _Mean)
        with pytest.raises(ValueError, match="already registered"):
            routing.register_router("registry_test_mean")(_Mean)
    finally:
        assert routing.unregister_router("registry_test_mean") is _Mean
    assert "registry_test_mean" not in routing.available()
    with pytest.raises(ValueError, match=r"argument `router` expected one of .*received 'registry_test_mean'"):
        routing.get("registry_test_mean")
    routing.register_router("registry_test_mean")(_Mean)  # free again
    assert routing.unregister_router("registry_test_mean") is _Mean
    with pytest.raises(
        ValueError,
        match=r"unregister_router: argument `name` expected one of \[.*'dynamic'.*\], received 'registry_test_mean'",
    ):
        routing.unregister_router("registry_test_mean")


@pytest.mark.parametrize(
    "attributes, message",
    [
        (
            {"pose_kinds": ("vector", "tensor")},
            r"_Bad.pose_kinds expected a non-empty tuple of \('vector', 'matrix'\), received \('vector', 'tensor'\)",
        ),
        ({"pose_kinds": ()}, r"_Bad.pose_kinds expected a non-empty tuple"),
        ({"pose_kinds": "vector"}, r"_Bad.pose_kinds expected a non-empty tuple"),
        ({"iterative": 1}, r"_Bad.iterative expected True or False, received 1"),
        ({"supports_initial_poses": None}, r"_Bad.supports_initial_poses expected True or False, received None"),
        (
            {"coupling_sums_over": "rows"},
            r"_Bad.coupling_sums_over expected one of \('parents', 'children'\), received 'rows'",
        ),
    ],
)
def test_register_router_refuses_invalid_capabilities(attributes, message):
    bad = type("_Bad", (_Mean,), attributes)
    with pytest.raises(ValueError, match=rf"register_router: {message}"):
        routing.register_router("registry_test_bad")(bad)
    assert "registry_test_bad" not in routing.available()


@pytest.mark.parametrize("name", routing.available())
def test_each_routers_coupling_sums_to_one_over_the_axis_it_declares(name):
    rng = np.random.default_rng(3)
    votes = rng.normal(size=(2, 6, 4, 8)).astype("float32")
    activations = rng.uniform(0.1, 1.0, size=(2, 6)).astype("float32")
    coupling = keras.ops.convert_to_numpy(
        routing.resolve(name, routing_iterations=None)(votes, activations, return_coupling=True)[-1]
    )
    declared = {"parents": 2, "children": 1}[routing.get(name).coupling_sums_over]
    np.testing.assert_allclose(coupling.sum(axis=declared), 1.0, atol=1e-5)
    assert np.abs(coupling.sum(axis=3 - declared) - 1.0).max() > 0.05  # and not over the other axis
