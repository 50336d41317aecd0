"""The Keras Applications contract on every registered configuration and every router it allows (timm style).

A configuration is tested here the moment it is registered: ``include_top=False`` with each
``pooling``, ``input_tensor``, ``classifier_activation``, ``include_preprocessing`` and the output
layer ``"predictions"``, and
(for constructors with a ``router`` argument) every registered router (``routing.available()``: every
built-in router routes vector and matrix poses, so every routed model takes each). To stay fast
the models are built with the small input shapes and class counts each configuration declares
(``register_configuration(test_settings=...)``), which keep its architecture (the registry test
checks the paper-sized models).
"""

import inspect

import keras
import numpy as np
import pytest

from keras_capsules import applications, routing
from keras_capsules.applications import CapsuleClassifier
from keras_capsules.layers import ConcurrentRouting
from keras_capsules.testing import random_images
from keras_capsules.testing.tiers import large, one_per_constructor

NAMES = applications.list_configurations()
#: Per constructor, its smallest configuration in the default tier, the others in the large tier.
TIERED_NAMES = one_per_constructor(NAMES)


def _constructor_name(name):
    return applications.get_configuration(name).constructor.__name__


def build_small(name, **overrides):
    """The configuration ``name`` built with its declared test settings, then ``overrides``."""
    entry = applications.get_configuration(name)
    assert entry.test_settings, f"{name}: declare its small settings (register_configuration(test_settings=...))"
    return entry.build(**{**entry.test_settings, **overrides})


def _np(x):
    return keras.ops.convert_to_numpy(x)


@pytest.mark.parametrize("name", TIERED_NAMES)
def test_include_top_false_with_each_pooling(name):
    features = build_small(name, include_top=False)
    assert isinstance(features, CapsuleClassifier) and "predictions" not in [layer.name for layer in features.layers]
    x = random_images(features)
    feature_map = _np(features(x))
    if feature_map.ndim == 2:  # fully connected capsules: no positions to pool
        with pytest.raises(ValueError, match=rf"{_constructor_name(name)}: argument `pooling`.*fully connected"):
            build_small(name, include_top=False, pooling="avg")
        return
    assert feature_map.ndim == 4 and tuple(features.output.shape[1:]) == feature_map.shape[1:]
    for pooling, reduce in (("avg", np.mean), ("max", np.max)):
        pooled = build_small(name, include_top=False, pooling=pooling)
        pooled.set_weights(features.get_weights())
        assert tuple(pooled.output.shape) == (None, feature_map.shape[-1])
        np.testing.assert_allclose(_np(pooled(x)), reduce(feature_map, axis=(1, 2)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", TIERED_NAMES)
def test_input_tensor_classifier_activation_preprocessing_and_predictions_layer(name):
    scores_model = build_small(name)  # classifier_activation=None: the raw scores
    assert isinstance(scores_model, CapsuleClassifier) and scores_model.output_names == ["predictions"]
    assert scores_model.get_layer("predictions").get_config()["activation"] == "linear"
    with pytest.raises(
        ValueError, match=rf"{_constructor_name(name)}: argument `pooling` expected None with include_top=True"
    ):
        build_small(name, pooling="avg")
    tensor = keras.Input(tuple(scores_model.inputs[0].shape[1:]))
    # include_preprocessing=True: the same weights serve [0, 255] images
    probabilities_model = build_small(
        name, input_tensor=tensor, classifier_activation="softmax", include_preprocessing=True
    )
    assert isinstance(probabilities_model, CapsuleClassifier) and probabilities_model.inputs[0] is tensor
    assert probabilities_model.output_names == ["predictions"] and tuple(probabilities_model.output.shape) == (None, 3)
    probabilities_model.set_weights(scores_model.get_weights())
    x = random_images(scores_model)
    scores = _np(scores_model(x)).astype("float64")
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(_np(probabilities_model(x * 255.0)), expected, rtol=1e-4, atol=1e-5)


def routed_constructors():
    """Constructors with a ``router`` argument (AgreementGLOM routes by its fixed GLOM attention; BaselineCNN has no capsules)."""
    names = {_constructor_name(n) for n in NAMES}
    return sorted(c for c in names if "router" in inspect.signature(getattr(applications, c)).parameters)


def router_configuration(constructor):
    """The configuration a constructor's routers are checked on: the one registered with ``test_routers=True``, else its first."""
    names = [n for n in NAMES if _constructor_name(n) == constructor]
    return next((n for n in names if applications.get_configuration(n).test_routers), min(names))


def _router_cases():
    """Every (configuration, router) pair; the default tier runs a diagonal: each router once, each constructor at least once."""
    constructors, routers = routed_constructors(), routing.available()
    diagonal = {
        (constructors[i % len(constructors)], routers[i % len(routers)])
        for i in range(max(len(constructors), len(routers)))
    }
    return [
        pytest.param(
            router_configuration(c), r, id=f"{router_configuration(c)}-{r}", marks=() if (c, r) in diagonal else large
        )
        for c in constructors
        for r in routers
    ]


def router_options(constructor, router):
    """``sequential_routing=True`` where a model routes concurrently and ``router`` takes no initial poses."""
    concurrent = "sequential_routing" in inspect.signature(getattr(applications, constructor)).parameters
    return {"sequential_routing": True} if concurrent and router not in routing.available(initial_poses=True) else {}


def routers_of(model):
    layers = [layer for layer in model.layers if hasattr(layer, "router")]
    for stack in (layer for layer in model.layers if isinstance(layer, ConcurrentRouting)):
        layers += stack.capsule_layers
    return [layer.router for layer in layers]


@pytest.mark.parametrize("name, router", _router_cases())
def test_every_router_the_model_allows_builds_and_runs(name, router):
    model = build_small(name, router=router, **router_options(_constructor_name(name), router))
    routers = routers_of(model)
    assert routers and all(r.router_name == router for r in routers)
    assert all(
        r.iterations == routing.get(router).iterations for r in routers
    )  # routing_iterations=None: the router's own
    scores = _np(model(random_images(model)))
    assert scores.shape == (2, 3) and np.all(np.isfinite(scores))


@pytest.mark.parametrize("constructor", routed_constructors())
def test_a_router_the_model_does_not_know_is_refused_by_name(constructor):
    with pytest.raises(ValueError, match=rf"{constructor}: argument `router`.*'nope'"):
        getattr(applications, constructor)(router="nope")
