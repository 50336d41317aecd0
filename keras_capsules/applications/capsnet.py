"""CapsNet: dynamic routing between capsules (Sabour, Frosst & Hinton 2017; ALGORITHMS.md §2.1)."""

import keras

from keras_capsules.applications import utils
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import CapsuleDecoder, FcCaps, PrimaryCaps

preprocess_input = utils.preprocess_input
decode_predictions = utils.decode_predictions

#: The paper's router: dynamic routing, 3 iterations, no per-parent bias (the 6.8M parameter count).
PAPER_ROUTER = {"name": "dynamic", "use_bias": False, "iterations": 3}


def CapsNet(
    include_top=True,
    weights=None,
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=10,
    classifier_activation=None,
    name="capsnet",
    router=None,
    routing_iterations=None,
    reconstruction=False,
    reconstruction_weight=0.0005,
    primary_capsule_dim=8,
    class_capsule_dim=16,
):
    """The MNIST CapsNet of Sabour et al. (2017).

    Conv 9x9x256 ReLU -> PrimaryCaps (32 types x 8D, 9x9, stride 2, squash; 6x6x32 = 1152 capsules on
    28x28 input) -> class capsules (``classes`` x 16D, one 8x16 ``W_ij`` per child-parent pair,
    dynamic routing) -> capsule lengths. With ``reconstruction=True`` the model is a
    :class:`~keras_capsules.applications.classifier.CapsuleClassifier` with the paper's decoder
    (160 -> 512 -> 1024 -> 784) and loss weight 0.0005 on the summed squared error.

    Parameters (28x28x1, 10 classes): 6,804,224 without decoder, 8,215,568 with it; with the official
    code's routing bias (``router={"name": "dynamic", "use_bias": True}``) 6,804,384.

    Args:
        include_top: include the class capsules and scores; otherwise return the primary capsules
            as a ``(batch, 6, 6, 256)`` feature map (see ``pooling``).
        weights: ``None`` or the path of a local weights file.
        input_tensor: optional Keras tensor to use as the image input.
        input_shape: ``(H, W, C)``, default ``(28, 28, 1)``; H and W at least 17.
        pooling: with ``include_top=False``: ``None``, ``"avg"`` or ``"max"`` global pooling.
        classes: number of class capsules.
        classifier_activation: ``None`` (scores are capsule lengths) or an activation on them.
        name: model name.
        router: router of the class layer (name, config dict or ``Router``); ``None`` is the paper's.
        routing_iterations: routing iterations of an iterative router (``None``: the router's default; paper: 3).
        reconstruction: add the reconstruction decoder and its loss.
        reconstruction_weight: weight of the summed squared reconstruction error.
        primary_capsule_dim: pose size of the 32 primary capsule types (paper: 8).
        class_capsule_dim: pose size of the class capsules (paper: 16).

    Returns:
        A built ``keras.Model``. Inputs are images in [0, 1] (see :func:`preprocess_input`).
    """
    input_shape = utils.validate_application_args(
        "CapsNet",
        include_top=include_top,
        weights=weights,
        input_tensor=input_tensor,
        input_shape=input_shape,
        pooling=pooling,
        classes=classes,
        classifier_activation=classifier_activation,
        default_shape=(28, 28, 1),
        min_size=17,
    )
    inputs, x = utils.model_inputs(input_tensor, input_shape)
    x = keras.layers.Conv2D(256, 9, activation="relu", name="conv1")(x)
    children = PrimaryCaps(32, primary_capsule_dim, kernel_size=9, strides=2, activation="squash", name="primary_caps")(x)
    class_layer = FcCaps(
        classes,
        class_capsule_dim,
        router=PAPER_ROUTER if router is None else router,
        routing_iterations=routing_iterations,
        name="class_caps",
    )
    decoder = CapsuleDecoder(input_shape, name="decoder") if reconstruction and include_top else None
    return utils.assemble(
        inputs=inputs,
        children=children,
        class_layer=class_layer,
        include_top=include_top,
        pooling=pooling,
        classifier_activation=classifier_activation,
        name=name,
        weights=weights,
        decoder=decoder,
        reconstruction_weight=reconstruction_weight,
        pixel_reduction="sum",
    )


SOURCE = "ALGORITHMS.md §2.1 (Sabour et al. 2017, 6.8M / 8.2M)"
register_configuration("CapsNet/mnist", CapsNet, {}, trainable_params=6_804_224, total_params=6_804_224, source=SOURCE)
register_configuration(
    "CapsNet/mnist-reconstruction", CapsNet, {"reconstruction": True}, trainable_params=8_215_568, total_params=8_215_568, source=SOURCE
)
register_configuration(
    "CapsNet/mnist-official-bias",
    CapsNet,
    {"router": {"name": "dynamic", "use_bias": True}},
    trainable_params=6_804_384,
    total_params=6_804_384,
    source=SOURCE + ", official code's 10x16 routing bias",
)
