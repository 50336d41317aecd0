import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.layers import FcCaps


def test_names_dicts_and_serialisations_resolve_to_fresh_routers():
    router = routing.resolve("dynamic")
    assert isinstance(router, routing.DynamicRouter) and router.iterations == 3  # the class default
    assert routing.resolve({"name": "dynamic", "iterations": 2}).iterations == 2
    serialised = keras.saving.serialize_keras_object(routing.DynamicRouter(iterations=4, use_bias=False))
    clone = routing.resolve(serialised)
    assert isinstance(clone, routing.DynamicRouter) and clone.iterations == 4 and clone.use_bias is False


def test_a_saved_built_router_resolves_to_a_router_built_for_the_same_shapes():
    saved = routing.DynamicRouter(iterations=2, name="kept")
    saved(np.zeros((1, 5, 3, 4), "float32"))
    revived = routing.resolve(keras.saving.serialize_keras_object(saved))
    assert revived.built and revived.name == "kept" and revived.iterations == 2
    assert [tuple(w.shape) for w in revived.weights] == [tuple(w.shape) for w in saved.weights] == [(3, 4)]


def test_an_instance_is_a_template_cloned_from_its_config():
    template = routing.EMRouter(iterations=2, final_lambda=0.02)
    first, second = routing.resolve(template), routing.resolve(template)
    assert first is not template and second is not first
    assert type(first) is routing.EMRouter
    assert (first.iterations, first.final_lambda) == (2, 0.02)
    # one instance can serve several layers: each gets its own router and its own weights
    layers = [FcCaps(3, 4, router=template, name=f"caps{i}") for i in range(2)]
    for layer in layers:
        layer(np.zeros((1, 5, 4), "float32"))
    assert layers[0].router is not layers[1].router
    assert {id(w) for w in layers[0].router.weights}.isdisjoint(id(w) for w in layers[1].router.weights)


@pytest.mark.parametrize(
    "spec",
    ["dynamic", {"name": "dynamic", "iterations": 5}, routing.DynamicRouter(iterations=5)],
    ids=["name", "dict", "instance"],
)
def test_routing_iterations_replaces_the_spec_iterations_and_none_keeps_them(spec):
    own = 5 if not isinstance(spec, str) else 3
    assert routing.resolve(spec).iterations == own
    assert routing.resolve(spec, routing_iterations=2).iterations == 2


def test_precedence_defaults_spec_overrides_iterations():
    router = routing.resolve(
        {"name": "dynamic", "iterations": 4, "use_bias": True},
        routing_iterations=2,
        defaults={"use_bias": False, "leaky": True},
        overrides={"iterations": 7},
    )
    assert router.use_bias is True  # the spec beats the defaults
    assert router.leaky is True  # a default the spec leaves alone applies
    assert router.iterations == 2  # routing_iterations beats everything


@pytest.mark.parametrize("name", routing.available())
def test_none_keeps_every_routers_own_default(name):
    expected = {
        "dynamic": 3,
        "em": 3,
        "fm_agreement": 1,
        "heinsen": 3,
        "inverted_dot_product": 2,
        "kernel": 3,
        "lstm": 3,
        "self_attention": 1,
        "self_routing": 1,
        "variational_bayes": 3,
    }
    assert routing.resolve(name, routing_iterations=None).iterations == expected[name]


def test_router_name_of_every_spec_kind():
    assert routing.router_name("em") == "em"
    assert routing.router_name({"name": "kernel", "num_components": 2}) == "kernel"
    assert routing.router_name(routing.SelfAttentionRouter()) == "self_attention"


def test_errors_name_the_owner_and_the_argument():
    with pytest.raises(ValueError, match=r"MyNet: argument `router`.*'nope'"):
        routing.resolve("nope", owner="MyNet")
    with pytest.raises(ValueError, match=r"MyNet: argument `router`.*'name' key"):
        routing.resolve({"iterations": 2}, owner="MyNet")
    with pytest.raises(TypeError, match=r"MyNet: argument `router`.*int"):
        routing.resolve(3, owner="MyNet")
    with pytest.raises(ValueError, match=r"FcCaps 'digits': argument `router`.*iterations.*single pass"):
        FcCaps(2, 4, router="self_attention", routing_iterations=3, name="digits")
