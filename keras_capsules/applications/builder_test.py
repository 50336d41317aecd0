"""The one application builder: a new application is its body and settings; the shared validation takes every integer type."""

import json

import keras
import numpy as np
import pytest

from keras_capsules.applications import CapsNet, EffCapsNet, EffConvCapsNet, MatrixCapsNet, builder


def _toy_check(a):
    a.classes = 4 if a.classes is None else a.classes


def _toy_body(x, a):
    def head(features):
        return keras.layers.Dense(a.classes, name="logits")(keras.layers.Flatten(name="flatten")(features))

    return builder.Network(keras.layers.Conv2D(2, 1, name="conv")(x), head=head)


#: A new application, declared as a module declares one: a 1x1 convolution, then a dense top.
TOY = builder.Application(
    "Toy", _toy_body, input_shape=(3, 3, 1), min_size=2, check=_toy_check, router_needs={"pose": "vector"}
)


def Toy(
    include_top=True,
    weights=None,
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=None,
    classifier_activation=None,
    name="toy",
    include_preprocessing=False,
    router="dynamic",
):
    return builder.build(TOY, locals())


def test_a_new_application_is_its_body_and_settings():
    model = Toy(classifier_activation="softmax")
    assert model.input_shape == (None, 3, 3, 1) and model.output_shape == (
        None,
        4,
    )  # the paper shape; classes from its check
    kernel, bias, dense, dense_bias = model.get_weights()
    x = np.random.default_rng(0).uniform(size=(2, 3, 3, 1)).astype("float32")
    features = x @ kernel[0, 0] + bias  # the 1x1 convolution: (2, 3, 3, 2)
    logits = features.reshape(2, 18) @ dense + dense_bias
    expected = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(
        model.predict(x, verbose=0), expected / expected.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6
    )
    pooled = Toy(include_top=False, pooling="max")
    pooled.set_weights([kernel, bias])
    assert pooled.layers[-1].name == "max_pool" and pooled.output_shape == (None, 2)
    np.testing.assert_allclose(pooled.predict(x, verbose=0), features.max(axis=(1, 2)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"pooling": "avg"}, r"`pooling` expected None with include_top=True"),
        ({"router": "nope"}, r"`router` expected a registered router .*received 'nope'"),
        ({"input_shape": (1, 3, 1)}, r"`input_shape` expected height and width >= 2"),
    ],
)
def test_the_builder_refuses_bad_arguments_naming_the_application(arguments, message):
    with pytest.raises(ValueError, match=rf"Toy: argument {message}"):
        Toy(**arguments)


@pytest.mark.parametrize(
    "constructor, integer",
    [(EffCapsNet, np.int64), (MatrixCapsNet, np.int32), (EffConvCapsNet, np.uint8), (CapsNet, np.int16)],
    ids=lambda v: getattr(v, "__name__", str(v)),
)
def test_numpy_integer_classes_and_input_shape_build_the_model_with_a_json_config(constructor, integer):
    height, width, channels = constructor().input_shape[1:]
    model = constructor(classes=integer(7), input_shape=(integer(height), integer(width), integer(channels)))
    assert model.output_shape == (None, 7) and model.input_shape == (None, height, width, channels)
    config = json.loads(json.dumps(model.get_config()))  # NumPy integers would not serialise
    assert type(model.constructor["arguments"]["classes"]) is int and model.constructor["arguments"]["classes"] == 7
    assert config["layers"][0]["config"]["batch_shape"] == [None, height, width, channels]


def test_bools_and_floats_are_still_refused_as_sizes():
    for classes in (True, 2.0, 2.5, "10", 0):
        with pytest.raises(
            ValueError, match=rf"EffCapsNet: argument `classes` expected a positive integer, received {classes!r}"
        ):
            EffCapsNet(classes=classes)
    for shape in ((28.0, 28, 1), (28, 28, True)):
        with pytest.raises(ValueError, match=r"EffCapsNet: argument `input_shape` expected .*integers"):
            EffCapsNet(input_shape=shape)


def test_the_builder_records_the_call_that_rebuilds_the_architecture():
    model = Toy(classes=5, classifier_activation="softmax")
    # Every parameter of Toy but weights and input_tensor, after validation: the paper input shape filled in, as JSON values.
    assert model.constructor == {
        "name": "Toy",
        "arguments": {
            "include_top": True,
            "input_shape": [3, 3, 1],
            "pooling": None,
            "classes": 5,
            "classifier_activation": "softmax",
            "name": "toy",
            "include_preprocessing": False,
            "router": "dynamic",
        },
    }
    rebuilt = Toy(**model.constructor["arguments"])
    assert [(w.path, w.shape) for w in rebuilt.weights] == [(w.path, w.shape) for w in model.weights]
    # A router instance is recorded as its Keras serialisation, which the router argument takes back.
    from keras_capsules import routing

    instance = Toy(router=routing.get("dynamic", iterations=2)).constructor["arguments"]["router"]
    assert instance["class_name"] == "DynamicRouter" and instance["config"]["iterations"] == 2
    assert routing.router_name(instance) == "dynamic"
    # Built on a tensor, the graph may hold other layers: nothing is recorded.
    assert Toy(input_tensor=keras.Input((3, 3, 1))).constructor is None
