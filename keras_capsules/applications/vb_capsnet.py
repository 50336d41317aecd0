"""Capsules with variational-Bayes routing (Ribeiro, Leontidis & Kollias 2020), smallNORB network (docs/applications/vb_capsnet.md)."""

import math
from collections.abc import Callable, Sequence

import keras

from keras_capsules.applications import builder, io
from keras_capsules.applications.classifier import CapsuleClassifier
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import ConvCaps, FcCaps
from keras_capsules.ops import output_size
from keras_capsules.presets import with_presets
from keras_capsules.routing import Router

preprocess_input = io.preprocess_input
decode_predictions = io.decode_predictions

#: (A, B, C, D) of the authors' smallNORB network (their ``--arch 64 8 16 16 5``): Conv1 channels, primary
#: capsule types, ConvCaps1 and ConvCaps2 types.
ARCHITECTURE = (64, 8, 16, 16)
_POSE = 16  # 4x4 matrix poses, stored flat
#: PyTorch's BatchNorm defaults (momentum 0.1 of the new statistics) in Keras' terms.
_BATCH_NORM = {"momentum": 0.9, "epsilon": 1e-5}


def _transform_initializer(in_types, out_types, kernel_size):
    """The code's Xavier-uniform transforms: ``U(+-sqrt(6 / (fan_in + fan_out)))``, fans ``types * K*K * 16``."""
    fans = (in_types + out_types) * kernel_size * kernel_size * _POSE
    bound = math.sqrt(6.0 / fans)
    return keras.initializers.RandomUniform(-bound, bound)


def _body(x, a):
    """Conv1 + BN + ReLU -> PrimaryCaps (BN poses, BN + sigmoid activations) -> ConvCaps1 -> ConvCaps2 -> class capsules."""
    filters, primary_types, types1, types2 = ARCHITECTURE
    height, width = a.input_shape[:2]
    grid0 = (output_size(height, 5, 2, "valid"), output_size(width, 5, 2, "valid"))
    grid1 = (output_size(grid0[0], 3, 2, "valid"), output_size(grid0[1], 3, 2, "valid"))

    x = keras.layers.Conv2D(
        filters, 5, strides=2, use_bias=False, kernel_initializer="he_uniform", name="conv1"
    )(x)  # fmt: skip
    x = keras.layers.BatchNormalization(name="conv1_bn", **_BATCH_NORM)(x)
    x = keras.layers.ReLU(name="conv1_relu")(x)
    poses = keras.layers.Conv2D(primary_types * _POSE, 1, use_bias=False, name="primary_poses")(x)
    poses = keras.layers.Reshape(grid0 + (primary_types, _POSE), name="primary_poses_split")(poses)
    poses = keras.layers.BatchNormalization(axis=-2, name="primary_poses_bn", **_BATCH_NORM)(poses)
    activations = keras.layers.Conv2D(primary_types, 1, use_bias=False, name="primary_activations")(x)
    activations = keras.layers.BatchNormalization(name="primary_activations_bn", **_BATCH_NORM)(activations)
    activations = keras.layers.Activation("sigmoid", name="primary_sigmoid")(activations)
    capsules = ConvCaps(
        types1,
        kernel_size=3,
        strides=2,
        transform="matrix",
        kernel_initializer=_transform_initializer(primary_types, types1, 3),
        router=builder.layer_router("VBCapsNet", a, grid0, 3, 2),
        name="conv_caps1",
    )((poses, activations))
    capsules = ConvCaps(
        types2,
        kernel_size=3,
        strides=1,
        transform="matrix",
        kernel_initializer=_transform_initializer(types1, types2, 3),
        router=builder.layer_router("VBCapsNet", a, grid1, 3, 1),
        name="conv_caps2",
    )(capsules)
    class_layer = FcCaps(
        a.classes,
        transform="matrix",
        shared_weights="positions",
        coordinate_addition=a.coordinate_addition,
        kernel_initializer=_transform_initializer(types2, a.classes, 1),
        router=builder.layer_router("VBCapsNet", a),
        name="class_caps",
    )
    return builder.Network(capsules, class_layer, scores=builder.class_activations)


APPLICATION = builder.Application(
    "VBCapsNet",
    _body,
    input_shape=(32, 32, 2),
    min_size=17,
    default_router="variational_bayes",
    router_needs={"pose": "matrix"},
)


@with_presets("VBCapsNet")
def VBCapsNet(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: Sequence[int] | None = None,
    pooling: str | None = None,
    classes: int = 5,
    classifier_activation: str | Callable | None = None,
    name: str = "vb_capsnet",
    include_preprocessing: bool = False,
    router: str | dict | Router | None = None,
    routing_iterations: int | None = None,
    spatial_routing: bool = True,
    coordinate_addition: bool = True,
) -> CapsuleClassifier:
    """The smallNORB network of capsules with variational-Bayes routing, as the authors' code builds it.

    Conv1 5x5, stride 2, 64 channels, VALID, no bias -> BatchNorm -> ReLU -> PrimaryCaps (1x1 convs without
    bias to 8 4x4 poses, batch-normalised per capsule type over positions and pose entries, and to 8
    activations, batch-normalised then sigmoid) -> ConvCaps1 (K=3, stride 2, 16 types) -> ConvCaps2 (K=3,
    stride 1, 16 types) -> class capsules (``classes`` types, 4x4 transforms shared across positions,
    coordinate addition) -> the class activations are the scores. Every capsule layer routes with
    :class:`~keras_capsules.routing.VariationalBayesRouter` (3 iterations); with ``spatial_routing=True``
    (default, as the code) the convolutional capsule layers' routers normalise each child over every parent
    position and type it feeds. On the code's 32x32 crops of both stereo images (``(32, 32, 2)``) the grids
    are 14x14 -> 6x6 -> 4x4.

    Parameters on 32x32x2 with 5 classes: **68,714** trainable, as the authors' ``CapsuleNet`` with its
    default ``--arch 64 8 16 16 5`` counts them in PyTorch (``sum(p.numel() for p in model.parameters())``,
    run by us): Conv1 3,200, its BatchNorm 128, PrimaryCaps 8,704 + 32 (its two BatchNorms' scales and
    offsets), the transforms 18,432, 36,864 and 1,280 (no vote bias), and ``beta_a``, ``beta_u`` per output
    type (74). The 308 non-trainable values are the BatchNorms' moving statistics (the stem's 128, the
    primary capsules' 32, and each router's pose and activation norms, 4 per output type: 148), as the
    code's running statistics: 69,022 in total.

    Initialisation as the code: Conv1 He-uniform (PyTorch's ``kaiming_uniform_``), the primary convolutions
    Glorot-uniform, the transforms Xavier-uniform over ``types * K*K * 16`` fans, ``beta_a`` and ``beta_u``
    zeros. Where the library differs from the code: coordinate addition adds IBM's
    ``(i + 0.5) / H`` offsets of :class:`~keras_capsules.layers.FcCaps` (the code adds ``(i + 1) / (10 H)``
    to the same pose entries). The code trains with cross-entropy on the class activations taken as logits
    (:class:`~keras_capsules.losses.ScoresCrossentropy` ``(from_logits=True)``), Adam 1e-3, batches of 128.

    Args:
        include_top: with the class capsules; otherwise the ConvCaps2 capsules as a
            ``(batch, H, W, 16*16)`` feature map (see ``pooling``).
        weights: ``None`` or the path of a local weights file.
        input_tensor: optional Keras tensor used as the image input.
        input_shape: ``(H, W, C)``, default ``(32, 32, 2)`` (the two stereo images of a smallNORB
            crop; ``(32, 32, 1)`` for one); H and W at least 17.
        pooling: with ``include_top=False``: ``None``, ``"avg"`` or ``"max"``.
        classes: number of class capsules (smallNORB: 5).
        classifier_activation: ``None`` (default: the scores are the class activations, in [0, 1])
            or an activation applied by the output layer ``"predictions"``.
        name: model name.
        include_preprocessing: take images in [0, 255] and rescale them inside the model.
        router: router of the capsule layers, any of ``routing.available(pose="matrix")`` (name, config dict or
            ``Router``; ``None``: variational Bayes). Each layer gets its own router built from the spec.
        routing_iterations: replaces the router's iterations (``None``: the router's own, 3 for variational Bayes).
        spatial_routing: cross-position normalisation in the convolutional capsule layers, for the routers
            that take a layer's geometry (``routing.available(child_grid=True)``); ``False`` routes each
            receptive field on its own.
        coordinate_addition: add the scaled position to the class-capsule votes (the code does).

    Returns:
        A built :class:`~keras_capsules.applications.CapsuleClassifier` mapping images in [0, 1]
        ([0, 255] with ``include_preprocessing=True``) to ``(batch, classes)`` scores.
    """
    return builder.build(APPLICATION, locals())


register_configuration(
    "VBCapsNet/smallnorb",
    VBCapsNet,
    {},
    trainable_params=68_714,
    total_params=69_022,
    source="the authors' CapsuleNet (github.com/fabio-deep/Variational-Capsule-Routing, src/capsnet.py, "
    "--arch 64 8 16 16 5, 2 input channels) counted in PyTorch: trainable; total adds the 308 BatchNorm "
    "moving statistics",
    test_settings={"input_shape": (17, 17, 2), "classes": 3},
)
