"""Eff-ConvCapsNet (REM App. B.1): structure, Keras Applications arguments, routing access."""

import keras
import numpy as np
import pytest

from keras_capsules import applications
from keras_capsules.applications import EffConvCapsNet
from keras_capsules.interpret import routing_trace
from keras_capsules.testing import assert_parameter_counts


def test_paper_structure_at_128x128():
    model = EffConvCapsNet()
    assert model.get_layer("primary_caps").output[0].shape[1:] == (26, 26, 16, 16)
    assert model.get_layer("conv_caps").output[0].shape[1:] == (12, 12, 16, 16)
    assert tuple(model.output.shape) == (None, 10)
    class_caps = model.get_layer("class_caps")
    assert class_caps.shared_weights == "positions" and tuple(class_caps.vote_transform.kernel.shape) == (
        16,
        10,
        16,
        16,
    )
    assert all(
        model.get_layer(n).router.router_name == "dynamic" and model.get_layer(n).router.iterations == 3
        for n in ("conv_caps", "class_caps")
    )
    # REM gives no count; counted by hand from the layer shapes (128x128x3 input, 10 classes):
    #   conv1 5*5*3*32+32 = 2,432   conv2 3*3*32*64+64 = 18,496   conv3 3*3*64*64+64 = 36,928
    #   conv4 3*3*64*256+256 = 147,712   BatchNorm gamma+beta 2*(32+64+64+256) = 832
    #   primary depthwise 3*3*256+256 = 2,560
    #   conv caps W 3*3*16 in types*16 out types*16*16 = 589,824, routing bias 16*16 = 256
    #   class caps W (shared over positions) 16 types*10*16*16 = 40,960, routing bias 10*16 = 160
    trainable = 2_432 + 18_496 + 36_928 + 147_712 + 832 + 2_560 + 589_824 + 256 + 40_960 + 160
    assert trainable == 840_160
    moving_statistics = 2 * (32 + 64 + 64 + 256)  # BatchNorm means and variances
    assert_parameter_counts(model, trainable, trainable + moving_statistics, "counted by hand above")
    entry = applications.get_configuration("EffConvCapsNet/128")
    assert (entry.trainable_params, entry.total_params) == (trainable, trainable + moving_statistics)


def test_small_input_top_options_and_coupling_access():
    x = np.random.default_rng(0).uniform(size=(2, 33, 33, 1)).astype("float32")
    model = EffConvCapsNet(
        input_shape=(33, 33, 1),
        classes=3,
        classifier_activation="softmax",
        router={"name": "dynamic", "use_bias": False},
        routing_iterations=2,
    )
    scores = keras.ops.convert_to_numpy(model(x))
    np.testing.assert_allclose(scores.sum(-1), 1.0, rtol=1e-5)
    trace = routing_trace(model, x)
    assert [(r.name, r.coupling.shape) for r in trace.layers] == [
        ("conv_caps", (2, 9 * 16, 16)),
        ("class_caps", (2, 16, 3)),
    ]
    assert model.get_layer("class_caps").router.iterations == 2 and not model.get_layer("conv_caps").router.use_bias
    features = EffConvCapsNet(include_top=False, input_shape=(40, 40, 3), pooling="max")
    assert tuple(features.output.shape) == (None, 256)
    tensor = keras.Input((64, 64, 3))
    assert EffConvCapsNet(input_tensor=tensor, classes=2).inputs[0] is tensor


def test_argument_errors():
    with pytest.raises(ValueError, match=r"EffConvCapsNet.*input_shape.*33"):
        EffConvCapsNet(input_shape=(32, 32, 3))
    with pytest.raises(ValueError, match=r"EffConvCapsNet.*weights"):
        EffConvCapsNet(weights="imagenet")
