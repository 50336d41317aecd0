"""Eff-ConvCapsNet: REM's convolutional Efficient-CapsNet for larger images (Renzulli et al., App. B.1; docs/reference/models.md#effconvcapsnet)."""

from collections.abc import Callable, Sequence

import keras

from keras_capsules.applications import builder, io
from keras_capsules.applications.classifier import CapsuleClassifier
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import ConvCaps, FcCaps, PrimaryCaps
from keras_capsules.presets import with_presets
from keras_capsules.routing import Router

preprocess_input = io.preprocess_input
decode_predictions = io.decode_predictions

#: Backbone convolutions (filters, kernel, stride), each followed by ReLU and BatchNorm (Efficient-CapsNet style).
STEM = ((32, 5, 2), (64, 3, 1), (64, 3, 1), (256, 3, 2))
#: Smallest input side: the ConvCaps layer needs a 3x3 primary grid.
MIN_SIZE = 33


def _body(x, a):
    """The stem -> depthwise PrimaryCaps -> ConvCaps -> class capsules shared across positions."""
    for i, (filters, kernel, stride) in enumerate(STEM):
        x = keras.layers.Conv2D(
            filters, kernel, strides=stride, activation="relu", kernel_initializer="he_normal", name=f"conv{i + 1}"
        )(x)
        x = keras.layers.BatchNormalization(name=f"bn{i + 1}")(x)
    primary = PrimaryCaps(16, 16, kernel_size=3, strides=1, depthwise=True, activation="squash", name="primary_caps")(x)
    routed = dict(router=a.router, routing_iterations=a.routing_iterations)
    conv_caps = ConvCaps(16, 16, kernel_size=3, strides=2, name="conv_caps", **routed)(primary)
    return builder.Network(conv_caps, FcCaps(a.classes, 16, shared_weights="positions", name="class_caps", **routed))


APPLICATION = builder.Application(
    "EffConvCapsNet",
    _body,
    input_shape=(128, 128, 3),
    min_size=MIN_SIZE,
    default_router="dynamic",
    router_needs={"pose": "vector"},
)


@with_presets("EffConvCapsNet")
def EffConvCapsNet(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: Sequence[int] | None = None,
    pooling: str | None = None,
    classes: int = 10,
    classifier_activation: str | Callable | None = None,
    name: str = "eff_conv_capsnet",
    include_preprocessing: bool = False,
    router: str | dict | Router | None = None,
    routing_iterations: int | None = None,
) -> CapsuleClassifier:
    """Eff-ConvCapsNet (REM, App. B.1): an Efficient-CapsNet backbone with three capsule layers and dynamic routing.

    Conv(32, 5, s2) -> Conv(64, 3) -> Conv(64, 3) -> Conv(256, 3, s2) (each ReLU + BatchNorm, valid
    padding) -> depthwise Conv(256, 3) PrimaryCaps, 16 types x 16D (squash) -> ConvCaps 16 types x
    16D, K3 s2 (dynamic routing) -> FcCaps ``classes`` x 16D with transformation matrices shared
    across positions (one 16x16 ``W`` per child type and class, ``shared_weights="positions"``, as
    REM's ``w_shared``; dynamic routing) -> lengths. On 128x128 inputs the grids are 26x26 (primary)
    and 12x12 (ConvCaps).

    Parameters (128x128x3, 10 classes, dynamic routing with its 0.1 bias): 840,160 trainable
    (589,824 of them in the ConvCaps transforms), 840,992 total. The paper gives no count; these are
    counted from the layer shapes (docs/reference/models.md#effconvcapsnet). The paper uses ``K = 21`` for REM's quantiser on this network.

    Args:
        include_top, weights, input_tensor, input_shape, pooling, classes, name:
            as in Keras Applications (default input ``(128, 128, 3)``; at least 33x33). With
            ``include_top=False`` the output is the ConvCaps grid as a ``(batch, H, W, 256)`` map
            (see ``pooling``).
        classifier_activation: ``None`` (default: the scores are the capsule lengths) or an
            activation applied by the output layer ``"predictions"``.
        include_preprocessing: take images in [0, 255] and rescale them inside the model.
        router: router of both routed layers, any of ``routing.available(pose="vector")`` (name, config dict or
            ``Router``; default ``"dynamic"`` with its 0.1 bias, as REM). Each layer gets its own
            router built from the spec (:func:`keras_capsules.routing.resolve`).
        routing_iterations: replaces the router's iterations (``None``: the router's own, 3 for dynamic routing).

    Returns:
        A built :class:`~keras_capsules.applications.CapsuleClassifier` taking images in [0, 1]
        ([0, 255] with ``include_preprocessing=True``).
    """
    return builder.build(APPLICATION, locals())


SOURCE = "REM App. B.1 (docs/reference/models.md#effconvcapsnet): counted from the layer shapes; the paper gives none"
register_configuration(
    "EffConvCapsNet/128",
    EffConvCapsNet,
    {},
    trainable_params=840_160,
    total_params=840_992,
    source=SOURCE,
    test_settings={"input_shape": (MIN_SIZE, MIN_SIZE, 3), "classes": 3},
)
