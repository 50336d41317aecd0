"""MatrixCapsNet: shapes, options and error paths (the registry test covers counts, saving and export)."""

import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.applications import MatrixCapsNet
from keras_capsules.testing import assert_finite, assert_parameter_counts


def test_small_network_parameters_and_structure():
    model = MatrixCapsNet(variant="small")
    assert_parameter_counts(model, 67_154, 67_156)
    conv1, conv2, classes = (model.get_layer(n) for n in ("conv_caps1", "conv_caps2", "class_caps"))
    assert conv1.router.child_grid == (16, 16) and (conv1.router.kernel_size, conv1.router.strides) == (3, 2)
    assert conv2.router.child_grid == (7, 7) and (conv2.router.kernel_size, conv2.router.strides) == (3, 1)
    assert classes.router.child_grid is None
    assert classes.shared_weights == "positions" and classes.coordinate_addition
    assert tuple(classes.vote_transform.kernel.shape) == (16, 5, 4, 4)
    x = np.random.default_rng(0).uniform(size=(2, 32, 32, 1)).astype("float32")
    scores = keras.ops.convert_to_numpy(model(x))
    assert scores.shape == (2, 5) and np.all((scores >= 0) & (scores <= 1))


def test_other_input_sizes_and_options():
    x = np.random.default_rng(1).uniform(size=(2, 20, 24, 1)).astype("float32")
    model = MatrixCapsNet(
        variant="small",
        input_shape=(20, 24, 1),
        classes=3,
        routing_iterations=2,
        spatial_routing=False,
        classifier_activation="softmax",
        coordinate_addition=False,
    )
    assert model.get_layer("conv_caps1").router.child_grid is None
    assert model.get_layer("conv_caps1").router.iterations == 2
    scores = keras.ops.convert_to_numpy(model(x))
    assert scores.shape == (2, 3)
    np.testing.assert_allclose(scores.sum(-1), 1.0, rtol=1e-5)


def test_router_override():
    model = MatrixCapsNet(
        variant="small", input_shape=(16, 16, 1), router={"name": "dynamic", "use_bias": False}, routing_iterations=2
    )
    assert isinstance(model.get_layer("class_caps").router, routing.DynamicRouter)
    assert_finite(model(np.ones((1, 16, 16, 1), "float32")))


@pytest.mark.parametrize("pooling, shape", [(None, (None, 5, 5, 256)), ("avg", (None, 256)), ("max", (None, 256))])
def test_without_top(pooling, shape):
    model = MatrixCapsNet(include_top=False, variant="small", pooling=pooling)
    assert tuple(model.output.shape) == shape


def test_router_instance_is_a_template_with_the_layers_geometry():
    template = routing.EMRouter(iterations=2, final_lambda=0.02)
    model = MatrixCapsNet(variant="small", router=template)
    routers = [model.get_layer(n).router for n in ("conv_caps1", "conv_caps2", "class_caps")]
    assert len({id(r) for r in routers + [template]}) == 4
    assert all(r.iterations == 2 and r.final_lambda == 0.02 for r in routers)
    assert [r.child_grid for r in routers] == [(16, 16), (7, 7), None]


def test_input_tensor():
    images = keras.Input((32, 32, 1))
    model = MatrixCapsNet(variant="small", input_tensor=images)
    assert model.inputs[0] is images


def test_errors():
    with pytest.raises(ValueError, match=r"MatrixCapsNet.*variant"):
        MatrixCapsNet(variant="huge")
    with pytest.raises(ValueError, match=r"MatrixCapsNet.*router.*'nope'"):
        MatrixCapsNet(router="nope")
    with pytest.raises(ValueError, match=r"MatrixCapsNet.*input_shape.*>= 13"):
        MatrixCapsNet(input_shape=(12, 12, 1))
    with pytest.raises(ValueError, match=r"MatrixCapsNet.*weights"):
        MatrixCapsNet(weights="imagenet")
    with pytest.raises(ValueError, match=r"MatrixCapsNet.*input_shape.*known height and width"):
        MatrixCapsNet(include_top=False, input_shape=(None, None, 1))
