"""Capsules with inverted dot-product attention routing (Tsai et al., ICLR 2020; ALGORITHMS.md §5.6)."""

import math

import keras

from keras_capsules import errors, routing
from keras_capsules.applications import utils
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import ConcurrentRouting, ConvCaps, FcCaps, PrimaryCaps
from keras_capsules.serialization import register

decode_predictions = utils.decode_predictions

#: apple's ``transforms.Normalize`` statistics for CIFAR (main_capsule.py).
CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2023, 0.1994, 0.2010)


def preprocess_input(x, data_format=None):
    """The paper's input pipeline without augmentation: ``(x / 255 - mean) / std`` per channel.

    Args:
        x: RGB images with values in [0, 255], channels last.
        data_format: accepted for Keras Applications compatibility; images are channels-last.
    """
    x = utils.preprocess_input(x, data_format)
    return (x - keras.ops.convert_to_tensor(CIFAR_MEAN)) / keras.ops.convert_to_tensor(CIFAR_STD)

#: Per-dataset settings (apple's configs): classes, pose size d, simple-backbone width, FC capsule layers.
DATASETS = {
    "cifar10": dict(classes=10, pose_dim=16, simple_filters=256, hidden_fc=()),
    "cifar100": dict(classes=100, pose_dim=36, simple_filters=128, hidden_fc=(20,)),
}
BACKBONES = ("simple", "resnet")
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
    out = keras.layers.ReLU(name=f"{name}_relu1")(_batch_norm(_conv(x, planes, 3, strides, False, f"{name}_conv1"), f"{name}_bn1"))
    out = _batch_norm(_conv(out, planes, 3, 1, False, f"{name}_conv2"), f"{name}_bn2")
    if strides != 1 or x.shape[-1] != planes:
        shortcut = _batch_norm(_conv(x, planes, 1, strides, False, f"{name}_shortcut_conv"), f"{name}_shortcut_bn")
    return keras.layers.ReLU(name=f"{name}_relu2")(keras.layers.Add(name=f"{name}_add")([out, shortcut]))


def _backbone(x, backbone, settings):
    if backbone == "simple":
        return keras.layers.ReLU(name="backbone_relu")(_conv(x, settings["simple_filters"], 3, 2, True, "backbone_conv"))
    x = keras.layers.ReLU(name="stem_relu")(_batch_norm(_conv(x, 64, 3, 1, False, "stem_conv"), "stem_bn"))
    for i in range(3):
        x = _basic_block(x, 64, 1, f"block1_{i}")
    for i in range(4):
        x = _basic_block(x, 128, 2 if i == 0 else 1, f"block2_{i}")
    return x


@register
class CapsuleLogits(keras.layers.Layer):
    """Apple's classifier head: one ``Linear(d -> 1)`` shared by every class capsule.

    Input: class poses ``(batch, classes, d)``. Output: logits ``(batch, classes)``.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = None

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 3, "(batch, classes, capsule_dim)")
        self.dense = keras.layers.Dense(1, name="linear", **_torch_default(input_shape[-1]))
        self.dense.build(input_shape)

    def call(self, poses):
        return keras.ops.squeeze(self.dense(poses), axis=-1)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:2])


def _router(spec, dropout, iterations):
    if isinstance(spec, routing.Router):
        errors.fail(
            "InvertedAttentionCapsNet", "router", "a router name or config dict (one router is built per capsule layer)",
            f"a {type(spec).__name__} instance",
        )
    config = {"name": spec} if isinstance(spec, str) else dict(spec)
    if "name" not in config:
        errors.fail("InvertedAttentionCapsNet", "router", "a router name or a config dict with a 'name' key", spec)
    if config["name"] == "inverted_dot_product" and dropout:
        config.setdefault("dropout", dropout)
    if iterations is not None:
        config.setdefault("iterations", iterations)
    return routing.get(config)


def InvertedAttentionCapsNet(
    include_top=True,
    weights=None,
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=None,
    classifier_activation="softmax",
    name="inverted_attention_capsnet",
    dataset="cifar10",
    backbone="resnet",
    routing_iterations=2,
    sequential_routing=False,
    router=None,
    dropout=0.0,
):
    """The CIFAR capsule networks of Tsai et al. (2020), with inverted dot-product attention routing.

    Backbone (``"simple"``: Conv 3x3 stride 2, padding 1, with bias, ReLU; ``"resnet"``: Conv 3x3 64
    + BN + ReLU, 3 BasicBlocks(64), 4 BasicBlocks(128, first with stride 2); both give 16x16 maps
    on 32x32 images) -> primary capsules (1x1 conv without bias, 32 types of ``d`` entries,
    LayerNorm) -> ConvCaps (32 types, K=3, stride 2) -> ConvCaps (32 types, K=3, stride 1) ->
    [CIFAR-100: FC capsules, 20 types] -> class capsules (FC) -> logits from one ``Linear(d -> 1)``
    shared by the class capsules (:class:`CapsuleLogits`). Every capsule layer uses ``p x p``
    matrix poses (``d = 16`` for CIFAR-10, 36 for CIFAR-100), a LayerNorm, and apple's
    initialisation ``N(0, 1) * sqrt(N_out / (sqrt(d) * N_in))`` (``N_in`` counts ``K*K`` children
    per type for conv layers). The capsule stack is a :class:`~keras_capsules.layers.ConcurrentRouting`
    (first pass sequential, then ``routing_iterations - 1`` concurrent sweeps).

    Trainable parameters (32x32x3, the reference counts, apple's ``count_parameters``):
    CIFAR-10 simple **561,297**, ResNet **1,828,817**; CIFAR-100 simple **1,462,989**, ResNet
    **2,799,629**. The ResNet models also hold 3,200 non-trainable BatchNorm statistics (PyTorch
    buffers, not counted by apple).

    The logits go through ``classifier_activation`` (``"softmax"``, the Keras Applications default;
    pass ``None`` for logits and train with ``from_logits=True``). The paper trains with softmax
    cross-entropy (SGD 0.1, momentum 0.9, weight decay 5e-4).

    Args:
        include_top: with the class capsules and head; otherwise the capsules that feed the class
            layer (CIFAR-10: the ConvCaps2 grid as a ``(batch, 5, 5, 32*d)`` map, see ``pooling``;
            CIFAR-100: the 20 FC capsules flattened), routed concurrently among themselves.
        weights: ``None`` or the path of a local weights file.
        input_tensor: optional Keras tensor used as the image input.
        input_shape: ``(H, W, C)``, default ``(32, 32, 3)``; with ``include_top`` exactly 32x32
            (the FC capsule layer has one transform per child); H and W at least 13.
        pooling: with ``include_top=False``: ``None``, ``"avg"`` or ``"max"``.
        classes: number of class capsules (default: 10 or 100 from ``dataset``).
        classifier_activation: applied to the logits (``"softmax"``; ``None`` keeps logits).
        name: model name.
        dataset: ``"cifar10"`` or ``"cifar100"`` (selects ``d`` and the layer stack).
        backbone: ``"simple"`` or ``"resnet"``.
        routing_iterations: ``t`` (apple's ``num_routing``; its README runs use 2).
        sequential_routing: the sequential schedule (ablation B) instead of concurrent routing.
        router: capsule-layer router, a name or config dict (``None``: ``"inverted_dot_product"``).
            Routers other than inverted dot-product attention need ``sequential_routing=True``.
        dropout: apple's ``--dp``, dropout before every capsule LayerNorm (0).

    Returns:
        A built ``keras.Model`` mapping images to ``(batch, classes)``; the paper feeds CIFAR images
        normalised per channel (:func:`preprocess_input` of this module).
    """
    errors.check_one_of("InvertedAttentionCapsNet", "dataset", dataset, tuple(DATASETS))
    errors.check_one_of("InvertedAttentionCapsNet", "backbone", backbone, BACKBONES)
    settings = DATASETS[dataset]
    classes = settings["classes"] if classes is None else classes
    input_shape = utils.validate_application_args(
        "InvertedAttentionCapsNet",
        include_top=include_top,
        weights=weights,
        input_tensor=input_tensor,
        input_shape=input_shape,
        pooling=pooling,
        classes=classes,
        classifier_activation=classifier_activation,
        default_shape=(32, 32, 3),
        min_size=13,
        fixed_size=True,
    )
    spec = "inverted_dot_product" if router is None else router
    pose_dim = settings["pose_dim"]
    side = math.isqrt(pose_dim)

    def transform_init(n_in, n_out):
        return keras.initializers.RandomNormal(stddev=math.sqrt(n_out / (side * n_in)))

    inputs, x = utils.model_inputs(input_tensor, input_shape)
    features = _backbone(x, backbone, settings)
    primary = PrimaryCaps(
        CAPSULE_TYPES, pose_dim, kernel_size=1, activation="layer_norm", use_bias=False,
        kernel_initializer=_torch_default(features.shape[-1])["kernel_initializer"], name="primary_caps",
    )(features)

    def new_router():
        return _router(spec, dropout, routing_iterations)

    grid = primary[0].shape[1:3]
    layers = []
    for i, strides in enumerate((2, 1)):
        layers.append(
            ConvCaps(
                CAPSULE_TYPES, kernel_size=3, strides=strides, transform="matrix", router=new_router(),
                kernel_initializer=transform_init(9 * CAPSULE_TYPES, CAPSULE_TYPES), name=f"conv_caps{i + 1}",
            )
        )
        grid = tuple((g - 3) // strides + 1 for g in grid)
    n_in = grid[0] * grid[1] * CAPSULE_TYPES
    for i, units in enumerate(settings["hidden_fc"]):
        layers.append(
            FcCaps(units, transform="matrix", router=new_router(), kernel_initializer=transform_init(n_in, units), name=f"fc_caps{i + 1}")
        )
        n_in = units
    class_caps = FcCaps(
        classes, transform="matrix", router=new_router(), kernel_initializer=transform_init(n_in, classes), name="class_caps"
    )

    def stack(capsule_layers, stack_name):
        return ConcurrentRouting(capsule_layers, iterations=routing_iterations, sequential=sequential_routing, name=stack_name)

    if include_top:
        return utils.assemble(
            inputs=inputs,
            children=primary,
            class_layer=stack(layers + [class_caps], "capsules"),
            include_top=True,
            pooling=pooling,
            classifier_activation=classifier_activation,
            name=name,
            weights=weights,
            score_head=lambda poses, activations: CapsuleLogits(name="logits")(poses),
        )
    children = stack(layers, "capsules")(primary)
    return utils.assemble(
        inputs=inputs,
        children=children,
        class_layer=None,
        include_top=False,
        pooling=pooling,
        classifier_activation=classifier_activation,
        name=name,
        weights=weights,
    )


SOURCE = "ALGORITHMS.md §5.6 (apple configs, paper Table 1; trainable, as apple's count_parameters)"
for _dataset, _backbone_name, _trainable, _total in (
    ("cifar10", "simple", 561_297, 561_297),
    ("cifar10", "resnet", 1_828_817, 1_828_817 + 3_200),
    ("cifar100", "simple", 1_462_989, 1_462_989),
    ("cifar100", "resnet", 2_799_629, 2_799_629 + 3_200),
):
    register_configuration(
        f"InvertedAttentionCapsNet/{_dataset}-{_backbone_name}",
        InvertedAttentionCapsNet,
        {"dataset": _dataset, "backbone": _backbone_name},
        trainable_params=_trainable,
        total_params=_total,
        source=SOURCE + ("; total adds 3,200 BatchNorm moving statistics" if _backbone_name == "resnet" else ""),
    )
