"""The shared argument validation of the application constructors: every integral type is an integer."""

import json

import numpy as np
import pytest

from keras_capsules.applications import CapsNet, EffCapsNet, EffConvCapsNet, MatrixCapsNet


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
    assert config["layers"][0]["config"]["batch_shape"] == [None, height, width, channels]


def test_bools_and_floats_are_still_refused_as_sizes():
    for classes in (True, 2.0, 2.5, "10", 0):
        with pytest.raises(ValueError, match=rf"EffCapsNet: argument `classes` expected a positive integer, received {classes!r}"):
            EffCapsNet(classes=classes)
    for shape in ((28.0, 28, 1), (28, 28, True)):
        with pytest.raises(ValueError, match=r"EffCapsNet: argument `input_shape` expected .*integers"):
            EffCapsNet(input_shape=shape)
