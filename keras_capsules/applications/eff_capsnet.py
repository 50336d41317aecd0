"""Efficient-CapsNet (Mazzia, Salvetti & Chiaberge 2021; docs/reference/models.md#effcapsnet)."""

from collections.abc import Callable, Sequence
from typing import Any

import keras

from keras_capsules import errors
from keras_capsules.applications import builder, io
from keras_capsules.applications.classifier import CapsuleClassifier
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import CapsuleDecoder, FcCaps, PrimaryCaps, UpsamplingDecoder
from keras_capsules.presets import with_presets
from keras_capsules.routing import Router

preprocess_input = io.preprocess_input
decode_predictions = io.decode_predictions

#: Per-variant settings: input shape, classes, stem (filters, kernel, stride), primary kernel and stride.
VARIANTS: dict[str, dict[str, Any]] = {
    "mnist": dict(
        input_shape=(28, 28, 1),
        classes=10,
        stem=((32, 5, 1), (64, 3, 1), (64, 3, 1), (128, 3, 2)),
        primary=(9, 1),
        norm="batch",
    ),
    "smallnorb": dict(
        input_shape=(48, 48, 2),
        classes=5,
        stem=((32, 7, 2), (64, 3, 1), (64, 3, 1), (128, 3, 2)),
        primary=(8, 1),
        norm="instance",
    ),
    "multimnist": dict(
        input_shape=(36, 36, 1),
        classes=10,
        stem=((32, 5, 1), (64, 3, 1), (64, 3, 2), (128, 3, 2)),
        primary=(5, 2),
        norm="batch",
    ),
}


def _stem(x, variant):
    settings = VARIANTS[variant]
    for i, (filters, kernel, stride) in enumerate(settings["stem"]):
        if settings["norm"] == "batch":
            x = keras.layers.Conv2D(
                filters, kernel, strides=stride, activation="relu", kernel_initializer="he_normal", name=f"conv{i + 1}"
            )(x)
            x = keras.layers.BatchNormalization(name=f"bn{i + 1}")(x)
        else:
            x = keras.layers.Conv2D(
                filters, kernel, strides=stride, kernel_initializer="he_normal", name=f"conv{i + 1}"
            )(x)
            x = keras.layers.LeakyReLU(negative_slope=0.3, name=f"leaky{i + 1}")(x)
            x = keras.layers.GroupNormalization(
                groups=filters,
                beta_initializer="random_uniform",
                gamma_initializer="random_uniform",
                name=f"instance_norm{i + 1}",
            )(x)
    return x


def _check(a):
    errors.check_one_of("EffCapsNet", "variant", a.variant, tuple(VARIANTS))
    errors.check_one_of("EffCapsNet", "primary_capsule_dim", a.primary_capsule_dim, (1, 2, 4, 8, 16, 32, 64, 128))
    a.classes = VARIANTS[a.variant]["classes"] if a.classes is None else a.classes


def _body(x, a):
    """The stem -> depthwise PrimaryCaps -> class capsules, with the variant's decoder."""
    x = _stem(x, a.variant)
    kernel, stride = VARIANTS[a.variant]["primary"]
    dim = a.primary_capsule_dim
    children = PrimaryCaps(
        128 // dim,
        dim,
        kernel_size=kernel,
        strides=stride,
        depthwise=True,
        activation="squash_efficient",
        name="primary_caps",
    )(x)
    class_layer = FcCaps(
        a.classes,
        a.class_capsule_dim,
        router=a.router,
        routing_iterations=a.routing_iterations,
        kernel_initializer="he_normal",
        name="class_caps",
    )
    decoder = None
    if a.reconstruction and a.include_top and a.variant == "smallnorb":
        decoder = UpsamplingDecoder(a.input_shape, name="decoder")
    elif a.reconstruction and a.include_top:
        decoder = CapsuleDecoder(
            a.input_shape, hidden_initializer="he_normal", output_initializer="glorot_normal", name="decoder"
        )
    return builder.Network(
        children,
        class_layer,
        decoder=decoder,
        reconstruction_weight=a.reconstruction_weight,
        pixel_reduction="mean",
        mask_top_k=2 if a.variant == "multimnist" else 1,
    )


APPLICATION = builder.Application(
    "EffCapsNet",
    _body,
    input_shape=lambda a: VARIANTS[a.variant]["input_shape"],
    min_size=lambda a: VARIANTS[a.variant]["input_shape"][0],
    check=_check,
    default_router="self_attention",
    router_needs={"pose": "vector"},
)


@with_presets("EffCapsNet")
def EffCapsNet(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: Sequence[int] | None = None,
    pooling: str | None = None,
    classes: int | None = None,
    classifier_activation: str | Callable | None = None,
    name: str = "eff_capsnet",
    include_preprocessing: bool = False,
    variant: str = "mnist",
    router: str | dict | Router | None = None,
    routing_iterations: int | None = None,
    reconstruction: bool = False,
    reconstruction_weight: float = 0.392,
    primary_capsule_dim: int = 8,
    class_capsule_dim: int = 16,
) -> CapsuleClassifier:
    """Efficient-CapsNet (Mazzia et al. 2021) in its MNIST, smallNORB and MultiMNIST configurations.

    Four convolutions (BatchNorm after ReLU; smallNORB: LeakyReLU then instance norm, implemented as
    ``GroupNormalization(groups=channels)`` because Keras 3 has no InstanceNormalization) ->
    depthwise-conv PrimaryCaps (16 x 8D, ``squash_efficient``) -> FcCaps (``classes`` x 16D,
    self-attention routing) -> lengths.

    Trainable parameters: 161,824 (``"mnist"``), 151,664 (``"smallnorb"``, 48x48x2 stereo input, 5
    classes), 154,656 (``"multimnist"``, 36x36x1).

    With ``reconstruction=True``: the MNIST/MultiMNIST dense decoder (160 -> 512 -> 1024 -> H*W*C,
    he_normal / glorot_normal) or the smallNORB upsampling decoder, with loss weight 0.392 on the
    mean squared error (= 0.0005 x SSE for 784 pixels). For MultiMNIST the reference reconstructs
    each digit separately from its own target image; ``fit(images, labels)`` has only the overlay,
    so here the decoder reconstructs the overlay from both labelled capsules.

    Args:
        include_top, weights, input_tensor, input_shape, pooling, classes, name:
            as in Keras Applications (``classes`` defaults to the variant's: 10, 5, 10). With
            ``include_top=False`` the output is the primary capsules as a ``(batch, 1, 1, 128)``
            map (the depthwise primary convolution leaves one position; see ``pooling``).
        classifier_activation: ``None`` (default: the scores are the capsule lengths) or an
            activation applied by the output layer ``"predictions"``.
        include_preprocessing: take images in [0, 255] and rescale them inside the model.
        variant: ``"mnist"``, ``"smallnorb"`` or ``"multimnist"``.
        router: class-layer router, any of ``routing.available(pose="vector")`` (default ``"self_attention"``).
        routing_iterations: replaces the router's iterations (``None``: the router's own).
        reconstruction: add the decoder and its loss.
        reconstruction_weight: weight on the mean squared reconstruction error.
        primary_capsule_dim: pose size of the primary capsules (paper: 8); the depthwise primary
            convolution keeps 128 channels, so there are ``128 // primary_capsule_dim`` of them.
        class_capsule_dim: pose size of the class capsules (paper: 16).

    Returns:
        A built :class:`~keras_capsules.applications.CapsuleClassifier` taking images in [0, 1]
        ([0, 255] with ``include_preprocessing=True``).
    """
    return builder.build(APPLICATION, locals())


SOURCE = "docs/reference/models.md#effcapsnet (Efficient-CapsNet, EscVM code)"
#: The small arguments the registry-wide contract test builds each configuration with.
TEST_SETTINGS = {"classes": 3}
register_configuration(
    "EffCapsNet/mnist",
    EffCapsNet,
    {"variant": "mnist"},
    trainable_params=161_824,
    total_params=162_400,
    source=SOURCE,
    test_settings=TEST_SETTINGS,
)
register_configuration(
    "EffCapsNet/mnist-reconstruction",
    EffCapsNet,
    {"variant": "mnist", "reconstruction": True},
    trainable_params=161_824 + 1_411_344,
    total_params=162_400 + 1_411_344,
    source=SOURCE + " + decoder 1,411,344",
    test_settings=TEST_SETTINGS,
)
register_configuration(
    "EffCapsNet/smallnorb",
    EffCapsNet,
    {"variant": "smallnorb"},
    trainable_params=151_664,
    source=SOURCE,
    test_settings=TEST_SETTINGS,
)
register_configuration(
    "EffCapsNet/smallnorb-reconstruction",
    EffCapsNet,
    {"variant": "smallnorb", "reconstruction": True},
    trainable_params=151_664 + 229_570,
    source=SOURCE
    + " + upsampling decoder 229,570 (seed Dense 5x16 -> 64: 5,184; convs 640 + 73,856 + 147,584; output conv 2,306)",
    test_settings=TEST_SETTINGS,
)
register_configuration(
    "EffCapsNet/multimnist",
    EffCapsNet,
    {"variant": "multimnist"},
    trainable_params=154_656,
    source=SOURCE,
    test_settings=TEST_SETTINGS,
)
register_configuration(
    "EffCapsNet/multimnist-reconstruction",
    EffCapsNet,
    {"variant": "multimnist", "reconstruction": True},
    trainable_params=154_656 + 1_936_144,
    total_params=154_656 + 576 + 1_936_144,
    source=SOURCE
    + " + decoder 160 -> 512 -> 1024 -> 1296: 82,432 + 525,312 + 1,328,400 = 1,936,144; 576 BatchNorm statistics",
    roundtrip=False,
    test_settings=TEST_SETTINGS,
)
