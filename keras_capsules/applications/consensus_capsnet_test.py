import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.applications import ConsensusCapsNet, get_configuration
from keras_capsules.applications.consensus_capsnet import routing_parameter_count
from keras_capsules.layers import IdentityPlusUniform
from keras_capsules.testing import assert_finite, assert_parameter_counts, count_weights


def images(n=2, shape=(32, 32, 1)):
    return np.random.default_rng(0).uniform(size=(n,) + shape).astype("float32")


def _dense(widths):
    """Parameters of a stack of Dense layers ``widths[0] -> widths[1] -> ...`` (kernel + bias)."""
    return sum(a * b + b for a, b in zip(widths, widths[1:]))


# Routing parameters counted by hand from the routers' definitions, per layer (ConvCaps1, ConvCaps2,
# ClassCaps: 16, 16 and 5 parents, 4x4 poses so d = 16):
# - kernel: a spectral mixture of Q components (Q mixture logits + Q x d frequencies + Q x d
#   bandwidths = 33 Q) and lambda1, lambda2, theta1, theta2, theta3 per parent (5 N_out):
#   (33*4 + 5*16) + (33*4 + 5*16) + (33*10 + 5*5) = 212 + 212 + 355 = 779;
# - lstm: a 16-unit cell on x = [mu, a, v, c] (2d + 2 = 34 inputs): 4*16*(34 + 16 + 1) = 3,264 per
#   layer, plus the compatibility and activation MLPs, each ending in Dense(1):
#   [16-1, 16-1] 17 + 17; [16-32-32-1, 16-64-64-1] 1,633 + 5,313; [16-64-64-1, 16-124-124-1] 5,313 + 17,733;
# - em: beta_a and beta_u per parent type: 2*16 + 2*16 + 2*5 = 74.
KERNEL_ROUTING = (33 * 4 + 5 * 16) * 2 + (33 * 10 + 5 * 5)
LSTM_CELL = 4 * 16 * (2 * 16 + 2 + 16 + 1)
LSTM_ROUTING = (
    3 * LSTM_CELL
    + _dense([16, 1]) * 2
    + _dense([16, 32, 32, 1]) + _dense([16, 64, 64, 1])
    + _dense([16, 64, 64, 1]) + _dense([16, 124, 124, 1])
)  # fmt: skip
EM_ROUTING = 2 * 16 + 2 * 16 + 2 * 5


@pytest.mark.parametrize(
    "router, routing_params", [("kernel", KERNEL_ROUTING), ("lstm", LSTM_ROUTING), ("em", EM_ROUTING)]
)
def test_parameter_count_excluding_routing_is_86408(router, routing_params):
    model = ConsensusCapsNet(router=router, classifier_activation="softmax")
    trainable = count_weights(model.trainable_weights)
    assert routing_parameter_count(model) == routing_params
    assert trainable - routing_parameter_count(model) == 86_408
    entry = get_configuration(f"ConsensusCapsNet/smallnorb-{router}")
    assert_parameter_counts(model, entry.trainable_params, entry.total_params, entry.source)
    scores = keras.ops.convert_to_numpy(model(images()))
    assert scores.shape == (2, 5)
    np.testing.assert_allclose(scores.sum(-1), 1.0, rtol=1e-5)


def test_em_router_gives_probabilities():
    model = ConsensusCapsNet(router="em", classifier_activation=None)
    scores = keras.ops.convert_to_numpy(model(images()))
    assert scores.shape == (2, 5) and np.all((scores >= 0) & (scores <= 1))
    assert all(
        isinstance(model.get_layer(n).router, routing.EMRouter) for n in ("conv_caps1", "conv_caps2", "class_caps")
    )


def test_architecture_follows_seed_001():
    model = ConsensusCapsNet(router="lstm")
    shapes = {
        name: tuple(model.get_layer(name).output[0].shape) for name in ("primary_caps", "conv_caps1", "conv_caps2")
    }
    assert shapes == {
        "primary_caps": (None, 14, 14, 8, 16),
        "conv_caps1": (None, 6, 6, 16, 16),
        "conv_caps2": (None, 4, 4, 16, 16),
    }
    layers = [model.get_layer(name) for name in ("conv_caps1", "conv_caps2", "class_caps")]
    for layer in layers:
        votes = layer.vote_transform
        assert votes.side == "left" and votes.normalize and not votes.shared
        assert isinstance(votes.kernel_initializer, IdentityPlusUniform)
        kernel = keras.ops.convert_to_numpy(votes.kernel)
        assert np.all(np.abs(kernel - np.eye(4)) <= 0.1 + 1e-6)
    assert [l.router.compatibility_units for l in layers] == [(), (32, 32), (64, 64)]
    assert [l.router.activation_units for l in layers] == [(), (64, 64), (124, 124)]
    assert [l.router.activation for l in layers] == ["sigmoid", "sigmoid", "linear"]
    assert tuple(layers[2].vote_transform.kernel.shape) == (256, 5, 4, 4)  # not shared across positions
    assert model.get_layer("primary_pose_relu") is not None


def test_router_instance_is_cloned_into_every_layer():
    template = routing.KernelRouter(num_components=3)
    model = ConsensusCapsNet(router=template, input_shape=(17, 17, 1))
    routers = [model.get_layer(name).router for name in ("conv_caps1", "conv_caps2", "class_caps")]
    assert len({id(r) for r in routers + [template]}) == 4
    assert all(isinstance(r, routing.KernelRouter) and r.num_components == 3 and r.iterations == 3 for r in routers)


def test_router_dict_applies_to_every_layer_and_options():
    model = ConsensusCapsNet(
        router={"name": "kernel", "num_components": 2, "kernel": "gaussian_mixture"},
        routing_iterations=2,
        primary_pose_activation="linear",
        classifier_activation=None,
    )
    layers = [model.get_layer(name) for name in ("conv_caps1", "conv_caps2", "class_caps")]
    assert all(l.router.num_components == 2 and l.router.iterations == 2 for l in layers)
    assert "primary_pose_relu" not in [l.name for l in model.layers]
    scores = keras.ops.convert_to_numpy(model(images()))
    assert np.all((scores > 0) & (scores < 1))  # sigmoid class activations
    assert_finite(scores)


@pytest.mark.parametrize("pooling, shape", [(None, (None, 4, 4, 256)), ("avg", (None, 256)), ("max", (None, 256))])
def test_include_top_false(pooling, shape):
    model = ConsensusCapsNet(include_top=False, pooling=pooling, input_shape=(32, 32, 2))
    assert tuple(model.output.shape) == shape


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"router": "nope"}, ValueError, "router"),
        ({"router": 3}, TypeError, "router"),
        ({"primary_pose_activation": "sigmoid"}, ValueError, "primary_pose_activation"),
        ({"input_shape": (16, 16, 1)}, ValueError, "input_shape"),
        ({"pooling": "sum"}, ValueError, "pooling"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        ConsensusCapsNet(**kwargs)


def _transform_kernels(model):
    """The vote transforms of ConvCaps1, ConvCaps2 and the class layer."""
    kernels = [w for w in model.weights if w.path.endswith("votes/kernel")]
    assert len(kernels) == 3
    return [keras.ops.convert_to_numpy(w) for w in kernels]


def test_transform_initializer_default_is_identity_plus_uniform_and_can_be_replaced():
    small = {"input_shape": (17, 17, 1), "classes": 3, "router": "dynamic"}
    for kernel in _transform_kernels(ConsensusCapsNet(**small)):
        assert kernel.shape[-2:] == (4, 4)
        assert np.all(np.abs(kernel - np.eye(4)) <= 0.1 + 1e-7)  # I + U(-0.1, 0.1), the paper's start
    for kernel in _transform_kernels(ConsensusCapsNet(transform_initializer="ones", **small)):
        np.testing.assert_array_equal(kernel, np.ones_like(kernel))
    drawn = _transform_kernels(
        ConsensusCapsNet(transform_initializer={"class_name": "RandomNormal", "config": {}}, **small)
    )
    assert all(np.abs(kernel - np.eye(4)).max() > 0.1 for kernel in drawn)  # far from the identity somewhere


def test_transform_initializer_rejects_what_keras_cannot_read():
    with pytest.raises(ValueError, match=r"ConsensusCapsNet.*transform_initializer.*Keras initializer.*'no_such_init'"):
        ConsensusCapsNet(input_shape=(17, 17, 1), classes=3, transform_initializer="no_such_init")
