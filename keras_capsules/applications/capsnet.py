"""CapsNet: dynamic routing between capsules (Sabour, Frosst & Hinton 2017; docs/reference/models.md#capsnet)."""

from collections.abc import Callable, Sequence

import keras

from keras_capsules.applications import builder, io
from keras_capsules.applications.classifier import CapsuleClassifier
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import CapsuleDecoder, FcCaps, PrimaryCaps
from keras_capsules.presets import with_presets
from keras_capsules.routing import Router

preprocess_input = io.preprocess_input
decode_predictions = io.decode_predictions

#: The paper's router: dynamic routing, 3 iterations, no per-parent bias (the 6.8M parameter count).
PAPER_ROUTER = {"name": "dynamic", "use_bias": False, "iterations": 3}
#: Initial ``W_ij`` of the class layer: N(0, 0.1), as REM's PyTorch reproduction (99.57 %); the official
#: code draws a truncated normal whose std is not visible and is 0.1 in its verbatim copies. Keras's
#: glorot_uniform (std 0.0027 for the 1152 x 10 x 8 x 16 kernel) starts the class capsules at lengths
#: of ~1e-7, where squash's gradient vanishes and the margin loss does not move for hundreds of steps.
VOTE_INITIALIZER = {"class_name": "RandomNormal", "config": {"mean": 0.0, "stddev": 0.1}}


def _body(x, a):
    """Conv 9x9x256 ReLU -> PrimaryCaps -> class capsules (routed by ``a.router``)."""
    x = keras.layers.Conv2D(256, 9, activation="relu", name="conv1")(x)
    children = PrimaryCaps(
        32,
        a.primary_capsule_dim,
        kernel_size=9,
        strides=2,
        activation="squash",
        pose_scale=a.primary_pose_scale,
        name="primary_caps",
    )(x)
    class_layer = FcCaps(
        a.classes,
        a.class_capsule_dim,
        router=a.router,
        routing_iterations=a.routing_iterations,
        kernel_initializer=keras.initializers.get(VOTE_INITIALIZER),
        name="class_caps",
    )
    decoder = CapsuleDecoder(a.input_shape, name="decoder") if a.reconstruction and a.include_top else None
    return builder.Network(
        children, class_layer, decoder=decoder, reconstruction_weight=a.reconstruction_weight, pixel_reduction="sum"
    )


APPLICATION = builder.Application(
    "CapsNet", _body, input_shape=(28, 28, 1), min_size=17, default_router=PAPER_ROUTER, router_needs={"pose": "vector"}
)


@with_presets("CapsNet")
def CapsNet(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: Sequence[int] | None = None,
    pooling: str | None = None,
    classes: int = 10,
    classifier_activation: str | Callable | None = None,
    name: str = "capsnet",
    include_preprocessing: bool = False,
    router: str | dict | Router | None = None,
    routing_iterations: int | None = None,
    reconstruction: bool = False,
    reconstruction_weight: float = 0.0005,
    primary_capsule_dim: int = 8,
    class_capsule_dim: int = 16,
    primary_pose_scale: float = 1.0,
) -> CapsuleClassifier:
    """The MNIST CapsNet of Sabour et al. (2017).

    Conv 9x9x256 ReLU -> PrimaryCaps (32 types x 8D, 9x9, stride 2, squash; 6x6x32 = 1152 capsules on
    28x28 input) -> class capsules (``classes`` x 16D, one 8x16 ``W_ij`` per child-parent pair,
    dynamic routing; ``W_ij`` ~ N(0, 0.1), see :data:`VOTE_INITIALIZER`) -> capsule lengths. With ``reconstruction=True`` the model has the paper's decoder
    (160 -> 512 -> 1024 -> 784) and loss weight 0.0005 on the summed squared error.

    Parameters (28x28x1, 10 classes): 6,804,224 without decoder, 8,215,568 with it; with the official
    code's routing bias (``router={"name": "dynamic", "use_bias": True}``) 6,804,384.

    The primary capsules are ``squash(conv(x) + b)`` (XifengGuo, REM). The official code's are
    ``squash(conv(x) / 32 + b)`` (a capsule layer routed once over its 32 types), which
    ``primary_pose_scale=1/32`` gives, as the ``CapsNet/mnist-official-bias`` configuration does;
    the parameter count is the same.

    Args:
        include_top: include the class capsules and scores; otherwise return the primary capsules
            as a ``(batch, 6, 6, 256)`` feature map (see ``pooling``).
        weights: ``None`` or the path of a local weights file.
        input_tensor: optional Keras tensor to use as the image input.
        input_shape: ``(H, W, C)``, default ``(28, 28, 1)``; H and W at least 17.
        pooling: with ``include_top=False``: ``None``, ``"avg"`` or ``"max"`` global pooling.
        classes: number of class capsules.
        classifier_activation: ``None`` (default: the scores are the capsule lengths, for the margin
            loss) or an activation applied by the output layer ``"predictions"``.
        name: model name.
        include_preprocessing: take images in [0, 255] and rescale them inside the model.
        router: router of the class layer, any registered router that routes vector poses
            (``routing.available(pose="vector")``; name, config dict or ``Router``);
            ``None`` is the paper's (:data:`PAPER_ROUTER`).
        routing_iterations: replaces the router's iterations (``None``: the router's own; paper: 3).
        reconstruction: add the reconstruction decoder and its loss.
        reconstruction_weight: weight of the summed squared reconstruction error.
        primary_capsule_dim: pose size of the 32 primary capsule types (paper: 8).
        class_capsule_dim: pose size of the class capsules (paper: 16).
        primary_pose_scale: factor on the primary capsules' convolution before their bias (``1/32``:
            the official code; see above).

    Returns:
        A built :class:`~keras_capsules.applications.CapsuleClassifier` taking images in [0, 1]
        (see :func:`preprocess_input`), or in [0, 255] with ``include_preprocessing=True``.
    """
    return builder.build(APPLICATION, locals())


SOURCE = "docs/reference/models.md#capsnet (Sabour et al. 2017, 6.8M / 8.2M)"
#: The small arguments the registry-wide contract test builds each configuration with.
TEST_SETTINGS = {"input_shape": (20, 20, 1), "classes": 3}
register_configuration(
    "CapsNet/mnist",
    CapsNet,
    {},
    trainable_params=6_804_224,
    total_params=6_804_224,
    source=SOURCE,
    test_settings=TEST_SETTINGS,
)
register_configuration(
    "CapsNet/mnist-reconstruction",
    CapsNet,
    {"reconstruction": True},
    trainable_params=8_215_568,
    total_params=8_215_568,
    source=SOURCE,
    test_settings=TEST_SETTINGS,
)
register_configuration(
    "CapsNet/mnist-official-bias",
    CapsNet,
    {"router": {"name": "dynamic", "use_bias": True}, "primary_pose_scale": 1 / 32},
    trainable_params=6_804_384,
    total_params=6_804_384,
    source=SOURCE + ", official code's 10x16 routing bias and conv/32 + bias primary capsules",
    test_settings=TEST_SETTINGS,
)
