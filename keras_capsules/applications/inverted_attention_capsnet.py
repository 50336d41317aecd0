"""Capsules with inverted dot-product attention routing (Tsai et al., ICLR 2020; docs/reference/models.md#invertedattentioncapsnet)."""

import math
from collections.abc import Callable, Sequence
from typing import Any

import keras

from keras_capsules import errors, routing
from keras_capsules.applications import builder, io
from keras_capsules.applications.classifier import CapsuleClassifier
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import CapsuleLogits, ConcurrentRouting, ConvCaps, FcCaps, PrimaryCaps
from keras_capsules.presets import with_presets
from keras_capsules.routing import Router

preprocess_input = io.preprocess_input
decode_predictions = io.decode_predictions

#: apple's ``transforms.Normalize`` statistics for CIFAR (main_capsule.py), applied inside the model.
CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2023, 0.1994, 0.2010)


#: Per-dataset settings (apple's configs): classes, pose size d, simple-backbone width, FC capsule layers.
DATASETS: dict[str, dict[str, Any]] = {
    "cifar10": dict(classes=10, pose_dim=16, simple_filters=256, hidden_fc=()),
    "cifar100": dict(classes=100, pose_dim=36, simple_filters=128, hidden_fc=(20,)),
}
BACKBONES = ("simple", "resnet")
#: ``variant`` values: ``"<dataset>-<backbone>"``.
VARIANTS = {f"{dataset}-{backbone}": (dataset, backbone) for dataset in DATASETS for backbone in BACKBONES}
#: Capsule types of the primary capsules and of both convolutional capsule layers.
CAPSULE_TYPES = 32


def _torch_default(fan_in):
    """PyTorch's default ``Conv2d``/``Linear`` initialisation: kernel and bias ``U(+-1/sqrt(fan_in))``."""
    limit = 1.0 / math.sqrt(fan_in)
    return dict(
        kernel_initializer=keras.initializers.VarianceScaling(1.0 / 3.0, mode="fan_in", distribution="uniform"),
        bias_initializer=keras.initializers.RandomUniform(-limit, limit),
    )


def _conv(x, filters, kernel_size, strides, use_bias, name):
    """PyTorch-style convolution: symmetric zero padding ``(kernel_size - 1) // 2``, then VALID."""
    pad = (kernel_size - 1) // 2
    if pad:
        x = keras.layers.ZeroPadding2D(pad, name=f"{name}_pad")(x)
    init = _torch_default(kernel_size * kernel_size * x.shape[-1])
    if not use_bias:
        init.pop("bias_initializer")
    return keras.layers.Conv2D(filters, kernel_size, strides=strides, use_bias=use_bias, name=name, **init)(x)


def _batch_norm(x, name):
    return keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5, name=name)(x)  # PyTorch's defaults


def _basic_block(x, planes, strides, name):
    shortcut = x
    out = keras.layers.ReLU(name=f"{name}_relu1")(
        _batch_norm(_conv(x, planes, 3, strides, False, f"{name}_conv1"), f"{name}_bn1")
    )
    out = _batch_norm(_conv(out, planes, 3, 1, False, f"{name}_conv2"), f"{name}_bn2")
    if strides != 1 or x.shape[-1] != planes:
        shortcut = _batch_norm(_conv(x, planes, 1, strides, False, f"{name}_shortcut_conv"), f"{name}_shortcut_bn")
    return keras.layers.ReLU(name=f"{name}_relu2")(keras.layers.Add(name=f"{name}_add")([out, shortcut]))


def _backbone(x, backbone, settings):
    if backbone == "simple":
        return keras.layers.ReLU(name="backbone_relu")(
            _conv(x, settings["simple_filters"], 3, 2, True, "backbone_conv")
        )
    x = keras.layers.ReLU(name="stem_relu")(_batch_norm(_conv(x, 64, 3, 1, False, "stem_conv"), "stem_bn"))
    for i in range(3):
        x = _basic_block(x, 64, 1, f"block1_{i}")
    for i in range(4):
        x = _basic_block(x, 128, 2 if i == 0 else 1, f"block2_{i}")
    return x


def _router(spec, dropout, iterations):
    defaults = {"dropout": dropout} if dropout and routing.router_name(spec) == "inverted_dot_product" else None
    return routing.resolve(spec, iterations, owner="InvertedAttentionCapsNet", defaults=defaults)


def _check(a):
    errors.check_one_of("InvertedAttentionCapsNet", "variant", a.variant, tuple(VARIANTS))
    a.classes = DATASETS[VARIANTS[a.variant][0]]["classes"] if a.classes is None else a.classes


def _body(x, a):
    """Standardisation -> backbone -> primary capsules -> the capsule stack, routed concurrently; logits from the class poses."""
    if a.input_shape[-1] != 3:
        errors.fail(
            "InvertedAttentionCapsNet",
            "input_shape",
            "3 channels (the model standardises with CIFAR's per-channel statistics)",
            a.input_shape,
        )
    dataset, backbone = VARIANTS[a.variant]
    settings = DATASETS[dataset]
    pose_dim = settings["pose_dim"]
    side = math.isqrt(pose_dim)

    def transform_init(n_in, n_out):
        return keras.initializers.RandomNormal(stddev=math.sqrt(n_out / (side * n_in)))

    x = keras.layers.Normalization(mean=CIFAR_MEAN, variance=[s * s for s in CIFAR_STD], name="standardize")(x)
    features = _backbone(x, backbone, settings)
    primary = PrimaryCaps(
        CAPSULE_TYPES,
        pose_dim,
        kernel_size=1,
        activation="layer_norm",
        use_bias=False,
        kernel_initializer=_torch_default(features.shape[-1])["kernel_initializer"],
        name="primary_caps",
    )(features)

    def new_router():
        return _router(a.router, a.dropout, a.routing_iterations)

    grid = primary[0].shape[1:3]
    layers = []
    for i, strides in enumerate((2, 1)):
        layers.append(
            ConvCaps(
                CAPSULE_TYPES,
                kernel_size=3,
                strides=strides,
                transform="matrix",
                router=new_router(),
                kernel_initializer=transform_init(9 * CAPSULE_TYPES, CAPSULE_TYPES),
                name=f"conv_caps{i + 1}",
            )
        )
        grid = tuple((g - 3) // strides + 1 for g in grid)
    n_in = grid[0] * grid[1] * CAPSULE_TYPES
    for i, units in enumerate(settings["hidden_fc"]):
        layers.append(
            FcCaps(
                units,
                transform="matrix",
                router=new_router(),
                kernel_initializer=transform_init(n_in, units),
                name=f"fc_caps{i + 1}",
            )
        )
        n_in = units
    class_caps = FcCaps(
        a.classes,
        transform="matrix",
        router=new_router(),
        kernel_initializer=transform_init(n_in, a.classes),
        name="class_caps",
    )

    # The stack's schedule takes the routers' iterations (t).
    iterations = class_caps.router.iterations
    if a.include_top:
        stack = ConcurrentRouting(layers + [class_caps], iterations, sequential=a.sequential_routing, name="capsules")
        return builder.Network(primary, stack, scores=_logits)
    return builder.Network(
        ConcurrentRouting(layers, iterations, sequential=a.sequential_routing, name="capsules")(primary)
    )


def _logits(poses, activations):
    """One ``Linear(d -> 1)`` shared by the class capsules: ``(batch, classes)`` logits."""
    return CapsuleLogits(name="logits")(poses)


APPLICATION = builder.Application(
    "InvertedAttentionCapsNet",
    _body,
    input_shape=(32, 32, 3),
    min_size=13,
    fixed_size=True,
    check=_check,
    default_router="inverted_dot_product",
    router_needs=lambda a: {"pose": "matrix"} if a.sequential_routing else {"pose": "matrix", "initial_poses": True},
    router_hint=" (sequential_routing=True takes the others)",
)


@with_presets("InvertedAttentionCapsNet")
def InvertedAttentionCapsNet(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: Sequence[int] | None = None,
    pooling: str | None = None,
    classes: int | None = None,
    classifier_activation: str | Callable | None = None,
    name: str = "inverted_attention_capsnet",
    include_preprocessing: bool = False,
    variant: str = "cifar10-resnet",
    router: str | dict | Router | None = None,
    routing_iterations: int | None = None,
    sequential_routing: bool = False,
    dropout: float = 0.0,
) -> CapsuleClassifier:
    """The CIFAR capsule networks of Tsai et al. (2020), with inverted dot-product attention routing.

    Per-channel standardisation with apple's CIFAR statistics (a ``Normalization`` layer named
    ``"standardize"``: the model takes images in [0, 1], like every application) -> backbone (``"simple"``: Conv 3x3 stride 2, padding 1, with bias, ReLU; ``"resnet"``: Conv 3x3 64
    + BN + ReLU, 3 BasicBlocks(64), 4 BasicBlocks(128, first with stride 2); both give 16x16 maps
    on 32x32 images) -> primary capsules (1x1 conv without bias, 32 types of ``d`` entries,
    LayerNorm) -> ConvCaps (32 types, K=3, stride 2) -> ConvCaps (32 types, K=3, stride 1) ->
    [CIFAR-100: FC capsules, 20 types] -> class capsules (FC) -> logits from one ``Linear(d -> 1)``
    shared by the class capsules (:class:`~keras_capsules.layers.CapsuleLogits`). Every capsule layer uses ``p x p``
    matrix poses (``d = 16`` for CIFAR-10, 36 for CIFAR-100), a LayerNorm, and apple's
    initialisation ``N(0, 1) * sqrt(N_out / (sqrt(d) * N_in))`` (``N_in`` counts ``K*K`` children
    per type for conv layers). The capsule stack is a :class:`~keras_capsules.layers.ConcurrentRouting`
    (first pass sequential, then ``t - 1`` concurrent sweeps, ``t`` the router's iterations: 2).

    Trainable parameters (32x32x3, the reference counts, apple's ``count_parameters``):
    CIFAR-10 simple **561,297**, ResNet **1,828,817**; CIFAR-100 simple **1,462,989**, ResNet
    **2,799,629**. The ResNet models also hold 3,200 non-trainable BatchNorm statistics (PyTorch
    buffers, not counted by apple).

    The logits go through ``classifier_activation`` (default ``None``: logits, trained with
    ``from_logits=True``; ``"softmax"`` gives probabilities). The paper trains with softmax
    cross-entropy (SGD 0.1, momentum 0.9, weight decay 5e-4).

    Args:
        include_top: with the class capsules and head; otherwise the capsules that feed the class
            layer (CIFAR-10: the ConvCaps2 grid as a ``(batch, 5, 5, 32*d)`` map, see ``pooling``;
            CIFAR-100: the 20 FC capsules flattened), routed concurrently among themselves.
        weights: ``None`` or the path of a local weights file.
        input_tensor: optional Keras tensor used as the image input.
        input_shape: ``(H, W, 3)``, default ``(32, 32, 3)`` (3 channels: the CIFAR standardisation);
            with ``include_top`` exactly 32x32 (the FC capsule layer has one transform per child);
            H and W at least 13.
        pooling: with ``include_top=False``: ``None``, or ``"avg"``/``"max"`` for CIFAR-10 (the
            CIFAR-100 features are fully connected capsules with no positions: a ``ValueError``).
        classes: number of class capsules (default: 10 or 100 from ``variant``).
        classifier_activation: ``None`` (default: logits) or an activation applied by the output
            layer ``"predictions"``.
        name: model name.
        include_preprocessing: take images in [0, 255] and rescale them inside the model (before
            the standardisation).
        variant: ``"<dataset>-<backbone>"``: ``"cifar10-resnet"`` (default), ``"cifar10-simple"``,
            ``"cifar100-resnet"`` or ``"cifar100-simple"`` (the dataset selects ``d`` and the layer stack).
        router: capsule-layer router (name, config dict or ``Router``; ``None``: ``"inverted_dot_product"``),
            one of ``routing.available(pose="matrix", initial_poses=True)`` for concurrent routing; any of
            ``routing.available(pose="matrix")`` with ``sequential_routing=True``.
        routing_iterations: replaces the router's iterations, ``t`` (``None``: the router's own; 2
            for inverted dot-product attention, apple's ``num_routing`` in its README runs).
        sequential_routing: the sequential schedule (ablation B) instead of concurrent routing.
        dropout: apple's ``--dp``, dropout before every capsule LayerNorm (0).

    Returns:
        A built :class:`~keras_capsules.applications.CapsuleClassifier` mapping images in [0, 1]
        ([0, 255] with ``include_preprocessing=True``) to ``(batch, classes)``.
    """
    return builder.build(APPLICATION, locals())


SOURCE = "docs/reference/models.md#invertedattentioncapsnet (apple configs, paper Table 1; trainable, as apple's count_parameters)"
for _dataset, _backbone_name, _trainable, _total in (
    ("cifar10", "simple", 561_297, 561_297),
    ("cifar10", "resnet", 1_828_817, 1_828_817 + 3_200),
    ("cifar100", "simple", 1_462_989, 1_462_989),
    ("cifar100", "resnet", 2_799_629, 2_799_629 + 3_200),
):
    register_configuration(
        f"InvertedAttentionCapsNet/{_dataset}-{_backbone_name}",
        InvertedAttentionCapsNet,
        {"variant": f"{_dataset}-{_backbone_name}"},
        trainable_params=_trainable,
        total_params=_total,
        source=SOURCE + ("; total adds 3,200 BatchNorm moving statistics" if _backbone_name == "resnet" else ""),
        test_settings={"classes": 3},
        test_routers=(_dataset, _backbone_name) == ("cifar10", "simple"),
    )
