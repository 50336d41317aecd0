"""Matrix capsules with EM routing (Hinton, Sabour & Frosst 2018), smallNORB network (docs/reference/models.md#matrixcapsnet)."""

from collections.abc import Callable, Sequence

import keras

from keras_capsules import errors
from keras_capsules.applications import builder, io
from keras_capsules.applications.classifier import CapsuleClassifier
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import ConvCaps, FcCaps, PrimaryCaps
from keras_capsules.layers.conv_caps import output_size
from keras_capsules.presets import with_presets
from keras_capsules.routing import Router

preprocess_input = io.preprocess_input
decode_predictions = io.decode_predictions

#: (A, B, C, D): Conv1 channels, primary capsule types, ConvCaps1 and ConvCaps2 types.
VARIANTS = {"large": (32, 32, 32, 32), "small": (64, 8, 16, 16)}


def _check(a):
    errors.check_one_of("MatrixCapsNet", "variant", a.variant, tuple(VARIANTS))


def _body(x, a):
    """Input BatchNorm -> Conv1 -> PrimaryCaps -> ConvCaps1 -> ConvCaps2 -> class capsules; the class activations score."""
    filters, primary_types, types1, types2 = VARIANTS[a.variant]
    height, width = a.input_shape[:2]
    grid0 = (output_size(height, 5, 2, "same"), output_size(width, 5, 2, "same"))
    grid1 = (output_size(grid0[0], 3, 2, "valid"), output_size(grid0[1], 3, 2, "valid"))
    transform_init = keras.initializers.TruncatedNormal(stddev=1.0)

    x = keras.layers.BatchNormalization(center=False, scale=False, momentum=0.999, epsilon=1e-3, name="input_bn")(x)
    x = keras.layers.Conv2D(
        filters,
        5,
        strides=2,
        padding="same",
        activation="relu",
        bias_initializer=keras.initializers.TruncatedNormal(stddev=0.01),
        name="conv1",
    )(x)
    capsules = PrimaryCaps(primary_types, 16, kernel_size=1, activation="sigmoid", name="primary_caps")(x)
    capsules = ConvCaps(
        types1,
        kernel_size=3,
        strides=2,
        transform="matrix",
        kernel_initializer=transform_init,
        router=builder.layer_router("MatrixCapsNet", a, grid0, 3, 2),
        name="conv_caps1",
    )(capsules)
    capsules = ConvCaps(
        types2,
        kernel_size=3,
        strides=1,
        transform="matrix",
        kernel_initializer=transform_init,
        router=builder.layer_router("MatrixCapsNet", a, grid1, 3, 1),
        name="conv_caps2",
    )(capsules)
    class_layer = FcCaps(
        a.classes,
        transform="matrix",
        shared_weights="positions",
        coordinate_addition=a.coordinate_addition,
        kernel_initializer=transform_init,
        router=builder.layer_router("MatrixCapsNet", a),
        name="class_caps",
    )
    return builder.Network(capsules, class_layer, scores=builder.class_activations)


APPLICATION = builder.Application(
    "MatrixCapsNet",
    _body,
    input_shape=(32, 32, 1),
    min_size=13,
    check=_check,
    default_router="em",
    router_needs={"pose": "matrix"},
)


@with_presets("MatrixCapsNet")
def MatrixCapsNet(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: Sequence[int] | None = None,
    pooling: str | None = None,
    classes: int = 5,
    classifier_activation: str | Callable | None = None,
    name: str = "matrix_capsnet",
    include_preprocessing: bool = False,
    variant: str = "large",
    router: str | dict | Router | None = None,
    routing_iterations: int | None = None,
    spatial_routing: bool = True,
    coordinate_addition: bool = True,
) -> CapsuleClassifier:
    """The smallNORB network of matrix capsules with EM routing, in IBM's implementation.

    BatchNorm on the input (no centre, no scale: TF-slim's defaults with ``center=False``) ->
    ReLU Conv1 5x5, stride 2, ``A`` channels, SAME -> PrimaryCaps (1x1 conv to ``B`` 4x4 poses,
    linear, plus 1x1 conv to ``B`` sigmoid activations) -> ConvCaps1 (K=3, stride 2, ``C`` types)
    -> ConvCaps2 (K=3, stride 1, ``D`` types) -> class capsules (``classes`` types, 4x4 transforms
    shared across positions, coordinate addition) -> the class activations are the scores. On 32x32
    crops the grids are 16x16 -> 7x7 -> 5x5. Train with
    :class:`~keras_capsules.losses.SpreadLoss` (and its margin schedule).

    Variants (``(A, B, C, D)``): ``"large"`` (32, 32, 32, 32), the paper's network, and ``"small"``
    (64, 8, 16, 16). Parameters on 32x32x1 with 5 classes: **316,394** trainable + 2 non-trainable
    (the input BatchNorm's moving mean and variance) = 316,396 total for ``"large"`` (the paper
    says "310K"); **67,154** trainable, 67,156 total for ``"small"``. The reference counts
    (docs/reference/models.md#matrixcapsnet) are the trainable ones: transforms ``W`` (no vote bias: IBM's
    ``affine_voting`` is not part of the paper), ``beta_a`` and ``beta_u`` per output type, the conv
    kernels and biases.

    Initialisation as IBM: Conv1 and PrimaryCaps kernels Glorot-uniform (TF-slim's default), Conv1
    bias TruncatedNormal(0.01); capsule transforms TruncatedNormal(std 1.0); betas as in
    :class:`~keras_capsules.routing.em.EMRouter`. (PrimaryCaps biases start at zero; IBM uses
    TruncatedNormal(0.01).)

    Routing: EM (``"em"``), 3 iterations (the paper; IBM's best smallNORB run used 2). With
    ``spatial_routing=True`` (default, IBM and the paper) the convolutional capsule layers' EM
    routers normalise each child across every parent position and type it feeds and start from
    IBM's spatially aware ``R``; ``False`` routes each receptive field independently.

    Args:
        include_top: with the class capsules; otherwise the ConvCaps2 capsules as a
            ``(batch, H, W, D*16)`` feature map (see ``pooling``).
        weights: ``None`` or the path of a local weights file.
        input_tensor: optional Keras tensor used as the image input.
        input_shape: ``(H, W, C)``, default ``(32, 32, 1)`` (smallNORB crops); H and W at least 13.
        pooling: with ``include_top=False``: ``None``, ``"avg"`` or ``"max"``.
        classes: number of class capsules (smallNORB: 5).
        classifier_activation: ``None`` (default: the scores are the class activations, in [0, 1])
            or an activation applied by the output layer ``"predictions"``.
        name: model name.
        include_preprocessing: take images in [0, 255] and rescale them inside the model.
        variant: ``"large"`` or ``"small"``.
        router: router of the capsule layers, any of ``routing.available(pose="matrix")`` (name, config dict or
            ``Router``; ``None``: EM). Each layer gets its own router built from the spec; routers that take
            a layer's geometry (EM, variational Bayes) get the convolutional layers' (``spatial_routing``).
        routing_iterations: replaces the router's iterations (``None``: the router's own, 3 for EM).
        spatial_routing: cross-position normalisation in the convolutional capsule layers, for the routers
            that take a layer's geometry (``routing.available(child_grid=True)``).
        coordinate_addition: add the scaled position to the class-capsule votes (paper, IBM).

    Returns:
        A built :class:`~keras_capsules.applications.CapsuleClassifier` mapping images in [0, 1]
        ([0, 255] with ``include_preprocessing=True``) to ``(batch, classes)`` scores.
    """
    return builder.build(APPLICATION, locals())


SOURCE = "docs/reference/models.md#matrixcapsnet (IBM models.py; counted from the layer shapes): trainable; total adds the input BatchNorm's 2 moving statistics"
#: The small arguments the registry-wide contract test builds each configuration with.
TEST_SETTINGS = {"input_shape": (16, 16, 1), "classes": 3}
for _key, _variant, _trainable in (("smallnorb", "large", 316_394), ("smallnorb-small", "small", 67_154)):
    register_configuration(
        f"MatrixCapsNet/{_key}",
        MatrixCapsNet,
        {"variant": _variant},
        trainable_params=_trainable,
        total_params=_trainable + 2,
        source=SOURCE,
        test_settings=TEST_SETTINGS,
    )
