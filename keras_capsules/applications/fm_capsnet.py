"""FMCapsNet: capsule networks with FM agreement (Zhao, Wang & Huang; docs/reference/models.md#fmcapsnet)."""

from collections.abc import Callable, Sequence
from typing import Any

import keras

from keras_capsules import errors, routing
from keras_capsules.applications import builder, io
from keras_capsules.applications.classifier import CapsuleClassifier
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import DeconvDecoder, FcCaps, Length, PrimaryCaps, Squash
from keras_capsules.presets import with_presets
from keras_capsules.routing import Router

preprocess_input = io.preprocess_input
decode_predictions = io.decode_predictions

WEIGHT_DECAY = 1e-4

#: Per-variant settings: input shape, residual blocks per stage, hidden capsule layers, decoder.
VARIANTS: dict[str, dict[str, Any]] = {
    # ex4_2 (CIFAR-10, SVHN, F-MNIST; paper Table 2): ResNet-v2 [8, 8, 8] + capsules 32/16/classes.
    "cifar": dict(input_shape=(32, 32, 3), blocks=(8, 8, 8), hidden_capsules=(32, 16)),
    # ex4_3_1 (trained on MNIST padded to 40x40, tested on affNIST): [1, 1, 1] + one class layer.
    "affnist": dict(input_shape=(40, 40, 1), blocks=(1, 1, 1), hidden_capsules=()),
    # ex4_1_light (section 4.1, Fashion-MNIST): the original CapsNet's shape with 64 stem filters.
    "light": dict(input_shape=(28, 28, 1), blocks=None, hidden_capsules=()),
}

#: The FM router of the ResNet variants (ex4_2, ex4_3_1): vote batch norm, L2-normalised votes and
#: FMRouting's 1/n scale (``regularize=True``), under which the class activations are the code's logits.
CODE_FM = {"name": "fm_agreement", "scale": "code"}
#: The FM router of the "light" variant: no vote batch norm, FMRouting's 1/n scale, L2-normalised
#: votes and squashed class capsules whose lengths are the class scores. ex4_1_light's code differs
#: (see the FMCapsNet docstring): it feeds un-normalised votes to FM and scores the raw sums.
LIGHT_FM = {"name": "fm_agreement", "batch_norm": False, "scale": "code", "activation": "squash"}


def _resnet_v2(x, blocks, start_filters=16):
    """FMRouting's CIFAR ResNet-v2 backbone (``res_blocks.build_resnet_backbone``, ``version='v2'``).

    Stem conv 3x3 -> BN -> ReLU; stages of pre-activation basic blocks (BN-ReLU-conv x 2; the very
    first block skips its first BN-ReLU, which the stem already applied), filters doubling and stride
    2 from the second stage, 1x1 conv shortcut (no BN) when the shape changes; final BN -> ReLU.
    Convolutions: no bias, he_normal, L2 1e-4; BN: momentum 0.99, epsilon 1e-3 (ex4_2's values).
    """
    conv = dict(use_bias=False, kernel_initializer="he_normal", kernel_regularizer=keras.regularizers.L2(WEIGHT_DECAY))
    x = keras.layers.Conv2D(start_filters, 3, padding="same", name="conv1", **conv)(x)
    x = keras.layers.BatchNormalization(name="conv1_bn")(x)
    x = keras.layers.ReLU(name="conv1_relu")(x)
    filters = start_filters
    for stage, repetitions in enumerate(blocks):
        for block in range(repetitions):
            prefix = f"stage{stage + 2}_block{block + 1}"
            strides = 2 if block == 0 and stage > 0 else 1
            shortcut = x
            y = x
            if not (stage == 0 and block == 0):
                y = keras.layers.BatchNormalization(name=f"{prefix}_bn1")(y)
                y = keras.layers.ReLU(name=f"{prefix}_relu1")(y)
            y = keras.layers.Conv2D(filters, 3, strides=strides, padding="same", name=f"{prefix}_conv1", **conv)(y)
            y = keras.layers.BatchNormalization(name=f"{prefix}_bn2")(y)
            y = keras.layers.ReLU(name=f"{prefix}_relu2")(y)
            y = keras.layers.Conv2D(filters, 3, padding="same", name=f"{prefix}_conv2", **conv)(y)
            if strides > 1 or shortcut.shape[-1] != filters:
                shortcut = keras.layers.Conv2D(filters, 1, strides=strides, name=f"{prefix}_shortcut", **conv)(shortcut)
            x = keras.layers.Add(name=f"{prefix}_add")([shortcut, y])
        filters *= 2
    x = keras.layers.BatchNormalization(name="final_bn")(x)
    return keras.layers.ReLU(name="final_relu")(x)


def _light_children(x):
    """ex4_1_light's stem: Conv 9x9x64 ReLU -> PrimaryCaps 9x9 s2, 8 types x 8D with bias, squash."""
    x = keras.layers.Conv2D(64, 9, activation="relu", name="conv1")(x)
    return PrimaryCaps(8, 8, kernel_size=9, strides=2, name="primary_caps")(x)


def _resnet_capsules(x, settings, classes, routers):
    """The ex4_2 / ex4_3_1 network after the input: ResNet-v2, primary capsules, hidden FM layers; returns ``(children, class_layer)``."""
    x = _resnet_v2(x, settings["blocks"])
    x = keras.layers.Conv2D(
        64,
        5,
        strides=2,
        padding="same",
        use_bias=False,
        kernel_initializer="he_normal",
        kernel_regularizer=keras.regularizers.L2(WEIGHT_DECAY),
        name="primary_conv",
    )(x)
    grid = x.shape[1] * x.shape[2] * 4
    x = keras.layers.Reshape((grid, 16), name="primary_capsules")(x)
    x = keras.layers.BatchNormalization(name="primary_bn")(x)
    primary = Squash(name="primary_squash")(x)
    # Activations of the primary capsules: their squashed lengths (FMRouting's ``with_prob``); FM
    # ignores them, EM (``router="em"``) uses them.
    children = (primary, Length(name="primary_lengths")(primary))

    def capsules(num, config, layer_name):
        return FcCaps(
            num,
            router=config,
            transform="matrix",
            matrix_side="right",
            kernel_initializer="glorot_normal",
            kernel_regularizer=keras.regularizers.L2(WEIGHT_DECAY),
            name=layer_name,
        )

    for i, num in enumerate(settings["hidden_capsules"]):
        children = capsules(num, routers[i], f"caps{i + 1}")(children)
    return children, capsules(classes, routers[-1], "class_caps")


def _routers(router, layers, routing_iterations):
    """One router per capsule layer from one spec; FM's hidden layers keep ``s_j`` unnormalised."""
    fm = routing.router_name(router) == "fm_agreement"
    return [
        routing.resolve(
            router, routing_iterations, owner="FMCapsNet", defaults={"normalize_pose": i == layers - 1} if fm else None
        )
        for i in range(layers)
    ]


def _check(a):
    """The variant, the decoder (the affNIST model's) and the variant's FM for ``router=None``."""
    errors.check_one_of("FMCapsNet", "variant", a.variant, tuple(VARIANTS))
    if a.reconstruction and a.variant != "affnist":
        errors.fail(
            "FMCapsNet",
            "reconstruction",
            f"False for variant={a.variant!r} (the decoder is the affNIST model's)",
            a.reconstruction,
        )
    if a.router is None:
        a.router = dict(LIGHT_FM) if a.variant == "light" else dict(CODE_FM)


def _body(x, a):
    """The variant's network up to its class layer; the class activations score."""
    settings = VARIANTS[a.variant]
    routers = _routers(a.router, len(settings["hidden_capsules"]) + 1, a.routing_iterations)
    if a.variant == "light":
        children = _light_children(x)
        class_layer = FcCaps(a.classes, 16, router=routers[0], kernel_initializer="glorot_normal", name="class_caps")
    else:
        children, class_layer = _resnet_capsules(x, settings, a.classes, routers)
    decoder = (
        DeconvDecoder(a.input_shape, capsule_dim=16, name="decoder") if a.reconstruction and a.include_top else None
    )
    return builder.Network(
        children,
        class_layer,
        scores=builder.class_activations,
        decoder=decoder,
        reconstruction_weight=a.reconstruction_weight,
        pixel_reduction="sum",
    )


APPLICATION = builder.Application(
    "FMCapsNet",
    _body,
    input_shape=lambda a: VARIANTS[a.variant]["input_shape"],
    min_size=8,
    check=_check,
    router_needs=lambda a: {"pose": "vector" if a.variant == "light" else "matrix"},
)


@with_presets("FMCapsNet")
def FMCapsNet(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: Sequence[int] | None = None,
    pooling: str | None = None,
    classes: int = 10,
    classifier_activation: str | Callable | None = None,
    name: str = "fm_capsnet",
    include_preprocessing: bool = False,
    variant: str = "cifar",
    router: str | dict | Router | None = None,
    routing_iterations: int | None = None,
    reconstruction: bool = False,
    reconstruction_weight: float = 0.0005,
) -> CapsuleClassifier:
    """The FM-agreement capsule networks of Zhao, Wang & Huang.

    ResNet-v2 backbone (16 start filters) -> PrimaryCaps (conv 5x5 s2 "same", 4 groups x 16 atoms,
    no bias, he_normal, L2 1e-4; reshaped to capsules; BatchNorm over the 16 atoms; squash) ->
    capsule layers (4x4 matrix transform ``u_i W_ij``, glorot_normal, L2 1e-4, then the FM router:
    vote BatchNorm, L2-normalised votes, FM agreement at FMRouting's ``1/n`` scale,
    :data:`CODE_FM`; Algorithm 1's ``1/(2n)`` would halve the logits) -> class activations ``a_j = sum_f s_j,f``
    used as logits (softmax cross-entropy in the paper; the default ``classifier_activation=None``
    keeps the logits, ``"softmax"`` turns them into probabilities). Hidden capsule layers pass the unnormalised
    ``s_j`` on; the class layer normalises its poses (FMRouting's ``norm_pose``).

    Variants:

    - ``"cifar"`` (paper Table 2; ex4_2): 32x32x3, ResNet-v2 [8, 8, 8] (24 blocks; the paper says
      25), capsules 64 -> 32 -> 16 -> ``classes``. **903,760** trainable parameters (backbone
      757,712), 3,744 BatchNorm statistics.
    - ``"affnist"`` (ex4_3_1): 40x40x1, [1, 1, 1], 100 primary capsules -> ``classes``.
      **195,376** trainable; with ``reconstruction=True`` the model has FMRouting's
      deconvolution decoder (:class:`~keras_capsules.layers.DeconvDecoder`, 186,145 trainable, **199,041** with its BatchNorm
      statistics) and loss weight 0.0005 on the summed squared error (``params.recons.balance_factor``),
      the decoder reading the labelled capsule's pose.
    - ``"light"`` (section 4.1, ex4_1_light; Fashion-MNIST): 28x28x1, Conv 9x9x64 ReLU -> PrimaryCaps
      9x9 s2 (8 types x 8D, with bias, squash; 288 capsules) -> ``classes`` x 16D with one 8x16 W
      per (child, class) pair (glorot_normal) -> FM agreement without vote batch norm, the code's
      1/n scale and squashed class capsules (:data:`LIGHT_FM`); the class scores are the squashed
      lengths (train with the margin loss, ``classifier_activation=None``). **705,728** trainable
      parameters, as the reference. The paper's DR comparison is the same network with
      ``router={"name": "dynamic", "use_bias": False}`` (also 705,728).
      Differences from ex4_1_light's code, which uses ``LastFMPool(activation='accumulate',
      shrink=True)``: there the votes enter FM without the L2 normalisation, and each class is
      scored by the raw sum ``sum_f s_j,f`` (unbounded) under the margin loss, with a unit pose.
      This variant keeps Algorithm 1's normalised votes and squashes the class capsules, as the
      affNIST code (ex4_3_1) does, so that the margin loss's 0.9 / 0.1 margins apply to lengths in
      ``[0, 1)``; the ``fashion_mnist`` preset was trained so. The primary capsules keep
      ``PrimaryCaps``' glorot-uniform kernel where the code draws them he-normal.

    ``router`` replaces FM in every capsule layer (e.g. ``"dynamic"`` or ``"em"`` for the paper's
    comparisons); each layer gets its own router built from the spec. An FM spec (name, dict or
    instance) gets ``normalize_pose=False`` in the hidden layers unless it sets ``normalize_pose``. Note that the vote BatchNorm belongs to the FM router here, so other routers run
    without it (FMRouting applies it before every router: 32 parameters per layer fewer).

    Reconstruction note: FM class poses are unit vectors, so ``model.reconstruct(images)`` without
    labels cannot pick the capsule by its length; pass ``labels`` (e.g. the predicted classes).
    The affNIST code (ex4_3_1) uses ``LastFMPool(activation='squash')`` (squashed poses, squash-length
    activations) with FMRouting's ``1/n`` scale (``regularize=True``):
    ``router={"name": "fm_agreement", "activation": "squash", "scale": "code"}``.

    Args:
        include_top: with the class layer and scores; otherwise the capsules that feed the class
            layer, flattened to ``(batch, capsules * 16)`` (16 x 16 for ``"cifar"``, the 100 primary
            capsules for ``"affnist"``), or for ``"light"`` the primary-capsule grid as a
            ``(batch, 6, 6, 64)`` map.
        weights: ``None`` or the path of a local weights file.
        input_tensor: optional Keras tensor to use as the image input.
        input_shape: ``(H, W, C)``; default ``(32, 32, 3)`` (``"cifar"``), ``(40, 40, 1)``
            (``"affnist"``) or ``(28, 28, 1)`` (``"light"``); H and W at least 8.
        pooling: with ``include_top=False``: ``None``, or ``"avg"``/``"max"`` for ``"light"`` (the
            other variants' features are fully connected capsules with no positions: a ``ValueError``).
        classes: number of class capsules.
        classifier_activation: ``None`` (default: the class activations, logits for FM's ``"sum"``)
            or an activation applied by the output layer ``"predictions"``.
        name: model name.
        include_preprocessing: take images in [0, 255] and rescale them inside the model.
        variant: ``"cifar"``, ``"affnist"`` or ``"light"``.
        router: ``None`` (the variant's FM: :data:`CODE_FM` or :data:`LIGHT_FM`) or a registered router (name, config
            dict or ``Router``) for every capsule layer: one of ``routing.available(pose="matrix")`` (``"cifar"``,
            ``"affnist"``: 4x4 matrix transforms) or ``routing.available(pose="vector")`` (``"light"``).
        routing_iterations: replaces the router's iterations (``None``: the router's own; FM makes one pass).
        reconstruction: add the deconvolution decoder (``"affnist"`` only).
        reconstruction_weight: weight of the summed squared reconstruction error.

    Returns:
        A built :class:`~keras_capsules.applications.CapsuleClassifier` taking images in [0, 1]
        ([0, 255] with ``include_preprocessing=True``; the paper standardises each image).
    """
    return builder.build(APPLICATION, locals())


SOURCE = "docs/reference/models.md#fmcapsnet (Zhao, Wang & Huang; FMRouting code)"
#: The small arguments the registry-wide contract test builds each configuration with.
TEST_SETTINGS = {"classes": 3}
register_configuration(
    "FMCapsNet/cifar10",
    FMCapsNet,
    {"variant": "cifar"},
    trainable_params=903_760,
    total_params=903_760 + 3_744,
    source=SOURCE,
    test_settings={**TEST_SETTINGS, "input_shape": (8, 8, 3)},
    test_routers=True,
)
register_configuration(
    "FMCapsNet/light",
    FMCapsNet,
    {"variant": "light"},
    trainable_params=705_728,
    total_params=705_728,
    source=SOURCE + "; ex4_1_light: conv 5,248 + primary 331,840 + W 288 x 10 x 8 x 16 = 368,640",
    test_settings=TEST_SETTINGS,
)
register_configuration(
    "FMCapsNet/affnist",
    FMCapsNet,
    {"variant": "affnist"},
    trainable_params=195_376,
    total_params=195_376 + 544,
    source=SOURCE,
    test_settings=TEST_SETTINGS,
)
register_configuration(
    "FMCapsNet/affnist-reconstruction",
    FMCapsNet,
    {"variant": "affnist", "reconstruction": True},
    trainable_params=195_376 + 186_145,
    total_params=195_376 + 544 + 199_041,
    source=SOURCE + " + deconvolution decoder 186,145 trainable / 199,041 with BatchNorm statistics",
    test_settings=TEST_SETTINGS,
)
