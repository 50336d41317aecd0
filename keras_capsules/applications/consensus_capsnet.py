"""ConsensusCapsNet: the learned-routing network of seed 001, "Learning to compute inner consensus" (ALGORITHMS.md §7.6)."""

import math

import keras

from keras_capsules import errors, routing
from keras_capsules.applications import utils
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import ConvCaps, FcCaps, PrimaryCaps
from keras_capsules.layers.initializers import IdentityPlusUniform

preprocess_input = utils.preprocess_input
decode_predictions = utils.decode_predictions

_BETA_INIT = {"class_name": "TruncatedNormal", "config": {"stddev": 0.1}}

#: Per-layer router configurations of the paper (ALGORITHMS.md §7.4-7.5): ConvCaps1, ConvCaps2, ClassCaps.
#: The class layer outputs logits (the code's ``activate=False`` with its default softmax loss).
PAPER_ROUTERS = {
    "kernel": (
        {"name": "kernel", "num_components": 4},
        {"name": "kernel", "num_components": 4},
        {"name": "kernel", "num_components": 10, "activation": "linear", "activation_prior": False},
    ),
    "lstm": (
        {"name": "lstm", "units": 16, "compatibility_units": [], "activation_units": []},
        {"name": "lstm", "units": 16, "compatibility_units": [32, 32], "activation_units": [64, 64]},
        {"name": "lstm", "units": 16, "compatibility_units": [64, 64], "activation_units": [124, 124], "activation": "linear"},
    ),
    # seed 001's EM baseline (emRouting.py) initialises both betas truncated-normal(0.1).
    "em": tuple({"name": "em", "beta_a_initializer": _BETA_INIT, "beta_u_initializer": _BETA_INIT} for _ in range(3)),
}


def routing_parameter_count(model):
    """Trainable parameters that live in the model's routers (the ``router`` of every capsule layer)."""
    seen = {}
    for layer in _all_layers(model):
        router = getattr(layer, "router", None)
        if isinstance(router, routing.Router):
            for weight in router.trainable_weights:
                seen[id(weight)] = math.prod(weight.shape)
    return sum(seen.values())


def _all_layers(model):
    stack, layers = list(model.layers), []
    while stack:
        layer = stack.pop()
        layers.append(layer)
        if isinstance(layer, keras.Model):
            stack.extend(layer.layers)
    return layers


def _routers(owner, router):
    if router is None:
        router = "kernel"
    if isinstance(router, str):
        if router not in PAPER_ROUTERS:
            errors.fail(owner, "router", f"one of {sorted(PAPER_ROUTERS)} or a router config dict", router)
        return [dict(config) for config in PAPER_ROUTERS[router]]
    if isinstance(router, dict):
        return [dict(router) for _ in range(3)]
    errors.fail(
        owner,
        "router",
        "'kernel', 'lstm', 'em' or a router config dict (applied to all three routing layers; "
        "a Router instance cannot be shared between layers)",
        router,
        TypeError,
    )


def ConsensusCapsNet(
    include_top=True,
    weights=None,
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=5,
    classifier_activation="softmax",
    name="consensus_capsnet",
    router="kernel",
    routing_iterations=3,
    primary_pose_activation="relu",
):
    """The 86K-parameter smallNORB network of seed 001 with learned routing (paper Table 1).

    Conv 5x5 s2 VALID 64 + ReLU + BatchNorm -> PrimaryCaps (1x1, 8 types of 4x4 matrix poses, ReLU on
    the poses as in the code, sigmoid activations) -> ConvCaps1 (3x3 s2, 16 types) -> ConvCaps2 (3x3
    s1, 16 types) -> ClassCaps (``classes`` capsules, one transform per child position and type,
    not shared) -> class activations as scores. Every capsule layer uses seed 001's vote transform
    ``v_ij = (W_ij / |W_ij|_F) P_i`` (``W`` left-multiplies the pose, Frobenius-normalised,
    initialised ``I + U(-0.1, 0.1)`` with :class:`~keras_capsules.layers.initializers.IdentityPlusUniform`).
    On the 32x32 smallNORB crop: 14x14x64 -> 14x14x8 -> 6x6x16 -> 4x4x16 -> 5.

    ``router``:

    - ``"kernel"`` (similarity learning): spectral-mixture kernels with Q = 4, 4, 10 components;
    - ``"lstm"`` (connectionist): 16-unit LSTM cells with compatibility/activation MLPs
      ``[]/[]``, ``[32, 32]/[64, 64]``, ``[64, 64]/[124, 124]``;
    - ``"em"``: EM routing (the paper's baseline), betas initialised truncated-normal(0.1) as in
      seed 001's ``emRouting.py``, otherwise the EM router's (IBM's) defaults;
    - a router config dict: used for all three routing layers.

    With ``"kernel"`` and ``"lstm"`` the class layer returns logits (the code's ``activate=False``
    under its default softmax loss), so ``classifier_activation="softmax"`` gives probabilities; with
    ``"em"`` the class activations are EM's probabilities in [0, 1] (use ``classifier_activation=None``
    with a spread or margin loss).

    Parameters: **86,408 excluding the routers' own parameters** (ALGORITHMS.md §7.6; conv 1,664,
    BatchNorm 128, primary 8,840, ConvCaps1 18,432, ConvCaps2 36,864, ClassCaps 20,480), which
    :func:`routing_parameter_count` separates; with routers: 87,187 trainable (kernel), 126,226
    (lstm) and 86,482 (em); plus 128 BatchNorm statistics.

    Not reproduced: the configs' ``coordinate_addition`` flag on the conv capsule layers (that code
    was not inspected, ALGORITHMS.md §11.2); the Frobenius norm uses ``sqrt(sum W^2 + 1e-5)`` without
    the code's extra ``+ 1e-6``.

    Args:
        include_top: with the capsule layers and class scores; otherwise the ConvCaps2 capsules as
            a ``(batch, 4, 4, 256)`` feature map (see ``pooling``).
        weights: ``None`` or the path of a local weights file.
        input_tensor: optional Keras tensor to use as the image input.
        input_shape: ``(H, W, C)``, default ``(32, 32, 1)``; H and W at least 17.
        pooling: with ``include_top=False``: ``None``, ``"avg"`` or ``"max"``.
        classes: number of class capsules (5 for smallNORB).
        classifier_activation: activation on the class activations (``"softmax"``; ``None`` keeps them).
        name: model name.
        router: ``"kernel"``, ``"lstm"``, ``"em"`` or a router config dict.
        routing_iterations: routing iterations of every layer (paper: 3).
        primary_pose_activation: ``"relu"`` (the code) or ``"linear"`` on the primary poses.

    Returns:
        A built ``keras.Model`` taking images in [0, 1] (the paper standardises smallNORB crops).
    """
    errors.check_one_of("ConsensusCapsNet", "primary_pose_activation", primary_pose_activation, ("relu", "linear"))
    routers = _routers("ConsensusCapsNet", router)
    input_shape = utils.validate_application_args(
        "ConsensusCapsNet",
        include_top=include_top,
        weights=weights,
        input_tensor=input_tensor,
        input_shape=input_shape,
        pooling=pooling,
        classes=classes,
        classifier_activation=classifier_activation,
        default_shape=(32, 32, 1),
        min_size=17,
    )
    inputs, x = utils.model_inputs(input_tensor, input_shape)
    x = keras.layers.Conv2D(64, 5, strides=2, padding="valid", activation="relu", name="conv1")(x)
    x = keras.layers.BatchNormalization(name="conv1_bn")(x)
    poses, acts = PrimaryCaps(8, 16, kernel_size=1, padding="same", activation="sigmoid", name="primary_caps")(x)
    if primary_pose_activation == "relu":
        poses = keras.layers.ReLU(name="primary_pose_relu")(poses)

    def capsule_args(config):
        return dict(
            router=config,
            routing_iterations=routing_iterations,
            transform="matrix",
            matrix_side="left",
            normalize_weights=True,
            kernel_initializer=IdentityPlusUniform(0.1),
        )

    children = ConvCaps(16, kernel_size=3, strides=2, name="conv_caps1", **capsule_args(routers[0]))((poses, acts))
    children = ConvCaps(16, kernel_size=3, strides=1, name="conv_caps2", **capsule_args(routers[1]))(children)
    class_layer = FcCaps(classes, name="class_caps", **capsule_args(routers[2]))
    return utils.assemble(
        inputs=inputs,
        children=children,
        class_layer=class_layer,
        include_top=include_top,
        pooling=pooling,
        classifier_activation=classifier_activation,
        name=name,
        weights=weights,
        score_head=lambda class_poses, class_acts: class_acts,
    )


SOURCE = "ALGORITHMS.md §7.6 (seed 001 Table 1): 86,408 excluding routing parameters"
register_configuration(
    "ConsensusCapsNet/smallnorb-kernel",
    ConsensusCapsNet,
    {"router": "kernel"},
    trainable_params=86_408 + 779,
    total_params=86_408 + 779 + 128,
    source=SOURCE + " + 779 kernel-routing parameters (Q = 4, 4, 10)",
)
register_configuration(
    "ConsensusCapsNet/smallnorb-lstm",
    ConsensusCapsNet,
    {"router": "lstm"},
    trainable_params=86_408 + 39_818,
    total_params=86_408 + 39_818 + 128,
    source=SOURCE + " + 39,818 LSTM-routing parameters (3 cells and MLPs, Table 2)",
)
register_configuration(
    "ConsensusCapsNet/smallnorb-em",
    ConsensusCapsNet,
    {"router": "em", "classifier_activation": None},
    trainable_params=86_408 + 74,
    total_params=86_408 + 74 + 128,
    source=SOURCE + " + 74 EM-routing parameters (beta_a, beta_u per output type)",
)
