"""Eff-ConvCapsNet: REM's convolutional Efficient-CapsNet for larger images (Renzulli et al., App. B.1; ALGORITHMS.md §8.5)."""

import keras

from keras_capsules.applications import utils
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import ConvCaps, FcCaps, PrimaryCaps

preprocess_input = utils.preprocess_input
decode_predictions = utils.decode_predictions

#: Backbone convolutions (filters, kernel, stride), each followed by ReLU and BatchNorm (Efficient-CapsNet style).
STEM = ((32, 5, 2), (64, 3, 1), (64, 3, 1), (256, 3, 2))
#: Smallest input side: the ConvCaps layer needs a 3x3 primary grid.
MIN_SIZE = 33


def EffConvCapsNet(
    include_top=True,
    weights=None,
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=10,
    classifier_activation=None,
    name="eff_conv_capsnet",
    router=None,
    routing_iterations=3,
):
    """Eff-ConvCapsNet (REM, App. B.1): an Efficient-CapsNet backbone with three capsule layers and dynamic routing.

    Conv(32, 5, s2) -> Conv(64, 3) -> Conv(64, 3) -> Conv(256, 3, s2) (each ReLU + BatchNorm, valid
    padding) -> depthwise Conv(256, 3) PrimaryCaps, 16 types x 16D (squash) -> ConvCaps 16 types x
    16D, K3 s2 (dynamic routing) -> FcCaps ``classes`` x 16D with transformation matrices shared
    across positions (one 16x16 ``W`` per child type and class, ``shared_weights="positions"``, as
    REM's ``w_shared``; dynamic routing) -> lengths. On 128x128 inputs the grids are 26x26 (primary)
    and 12x12 (ConvCaps).

    Parameters (128x128x3, 10 classes, dynamic routing with its 0.1 bias): 840,160 trainable
    (589,824 of them in the ConvCaps transforms), 840,992 total. The paper gives no count; the
    configuration is registered with ``trainable_params=None``. The paper uses ``K = 21`` for REM's quantiser on this network.

    Args:
        include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation, name:
            as in Keras Applications (default input ``(128, 128, 3)``; at least 33x33).
        router: router of both routed layers (name, config dict or ``Router``; default
            ``"dynamic"`` with its 0.1 bias, as REM). With a ``Router`` instance, both layers get
            their own copy from its config.
        routing_iterations: routing iterations (3).

    Returns:
        A built ``keras.Model`` taking images in [0, 1].
    """
    input_shape = utils.validate_application_args(
        "EffConvCapsNet",
        include_top=include_top,
        weights=weights,
        input_tensor=input_tensor,
        input_shape=input_shape,
        pooling=pooling,
        classes=classes,
        classifier_activation=classifier_activation,
        default_shape=(128, 128, 3),
        min_size=MIN_SIZE,
    )
    inputs, x = utils.model_inputs(input_tensor, input_shape)
    for i, (filters, kernel, stride) in enumerate(STEM):
        x = keras.layers.Conv2D(filters, kernel, strides=stride, activation="relu", kernel_initializer="he_normal", name=f"conv{i + 1}")(x)
        x = keras.layers.BatchNormalization(name=f"bn{i + 1}")(x)
    primary = PrimaryCaps(16, 16, kernel_size=3, strides=1, depthwise=True, activation="squash", name="primary_caps")(x)
    router = "dynamic" if router is None else router
    conv_caps = ConvCaps(
        16, 16, kernel_size=3, strides=2, router=_router_copy(router), routing_iterations=routing_iterations, name="conv_caps"
    )(primary)
    class_layer = FcCaps(
        classes, 16, router=_router_copy(router), routing_iterations=routing_iterations, shared_weights="positions", name="class_caps"
    )
    return utils.assemble(
        inputs=inputs,
        children=conv_caps,
        class_layer=class_layer,
        include_top=include_top,
        pooling=pooling,
        classifier_activation=classifier_activation,
        name=name,
        weights=weights,
    )


def _router_copy(router):
    """A fresh router for each layer: names and dicts pass through, instances are cloned from their config."""
    if isinstance(router, keras.layers.Layer):
        return type(router).from_config({k: v for k, v in router.get_config().items() if k != "name"})
    return router


SOURCE = "ALGORITHMS.md §8.5 (REM App. B.1); the paper gives no parameter count"
register_configuration("EffConvCapsNet/128", EffConvCapsNet, {}, trainable_params=None, source=SOURCE)
