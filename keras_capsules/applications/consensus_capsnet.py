"""ConsensusCapsNet: the learned-routing network of the inner-consensus paper (docs/reference/models.md#consensuscapsnet).

The paper: *Learning to compute inner consensus: a novel approach to modeling agreement between capsules*.
"""

import math
from collections.abc import Callable, Sequence

import keras

from keras_capsules import errors, routing
from keras_capsules.applications import builder, io
from keras_capsules.applications.classifier import CapsuleClassifier
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import ConvCaps, FcCaps, PrimaryCaps
from keras_capsules.layers.initializers import IdentityPlusUniform
from keras_capsules.presets import with_presets
from keras_capsules.routing import Router

preprocess_input = io.preprocess_input
decode_predictions = io.decode_predictions

_BETA_INIT = {"class_name": "TruncatedNormal", "config": {"stddev": 0.1}}

#: Per-layer router configurations of the paper (docs/reference/routers.md#learned-routing-inner-consensus): ConvCaps1, ConvCaps2, ClassCaps.
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
        {
            "name": "lstm",
            "units": 16,
            "compatibility_units": [64, 64],
            "activation_units": [124, 124],
            "activation": "linear",
        },
    ),
    # The inner-consensus code's EM baseline (emRouting.py) initialises both betas truncated-normal(0.1).
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


def _routers(router, routing_iterations):
    """The three routers (ConvCaps1, ConvCaps2, ClassCaps) from one spec.

    The name of a paper router (``"kernel"``, ``"lstm"``, ``"em"``) selects its per-layer
    :data:`PAPER_ROUTERS` configurations; any other spec (another name, a config dict, an instance)
    is used for all three layers.
    """
    specs = PAPER_ROUTERS[router] if isinstance(router, str) and router in PAPER_ROUTERS else (router,) * 3
    return [routing.resolve(spec, routing_iterations, owner="ConsensusCapsNet") for spec in specs]


def _check(a):
    errors.check_one_of("ConsensusCapsNet", "primary_pose_activation", a.primary_pose_activation, ("relu", "linear"))
    if a.transform_initializer is not None:
        try:
            keras.initializers.get(a.transform_initializer)
        except (ValueError, TypeError):
            errors.fail(
                "ConsensusCapsNet",
                "transform_initializer",
                "None or a Keras initializer (a name, a config dict or an instance)",
                a.transform_initializer,
            )


def _transform_initializer(spec):
    """The vote transforms' initializer: the paper's ``I + U(-0.1, 0.1)`` unless ``spec`` names another."""
    return IdentityPlusUniform(0.1) if spec is None else keras.initializers.get(spec)


def _body(x, a):
    """Conv + BatchNorm -> PrimaryCaps -> ConvCaps1 -> ConvCaps2 -> class capsules; the class activations score."""
    routers = _routers(a.router, a.routing_iterations)
    x = keras.layers.Conv2D(64, 5, strides=2, padding="valid", activation="relu", name="conv1")(x)
    x = keras.layers.BatchNormalization(name="conv1_bn")(x)
    poses, acts = PrimaryCaps(8, 16, kernel_size=1, padding="same", activation="sigmoid", name="primary_caps")(x)
    if a.primary_pose_activation == "relu":
        poses = keras.layers.ReLU(name="primary_pose_relu")(poses)

    def capsule_args(config):
        return dict(
            router=config,
            transform="matrix",
            matrix_side="left",
            normalize_weights=True,
            kernel_initializer=_transform_initializer(a.transform_initializer),
        )

    children = ConvCaps(16, kernel_size=3, strides=2, name="conv_caps1", **capsule_args(routers[0]))((poses, acts))
    children = ConvCaps(16, kernel_size=3, strides=1, name="conv_caps2", **capsule_args(routers[1]))(children)
    class_layer = FcCaps(a.classes, name="class_caps", **capsule_args(routers[2]))
    return builder.Network(children, class_layer, scores=builder.class_activations)


APPLICATION = builder.Application(
    "ConsensusCapsNet", _body, input_shape=(32, 32, 1), min_size=17, check=_check, router_needs={"pose": "matrix"}
)


@with_presets("ConsensusCapsNet")
def ConsensusCapsNet(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: Sequence[int] | None = None,
    pooling: str | None = None,
    classes: int = 5,
    classifier_activation: str | Callable | None = None,
    name: str = "consensus_capsnet",
    include_preprocessing: bool = False,
    router: str | dict | Router = "kernel",
    routing_iterations: int | None = None,
    primary_pose_activation: str = "relu",
    transform_initializer: str | dict | keras.initializers.Initializer | None = None,
) -> CapsuleClassifier:
    """The 86K-parameter smallNORB network of the inner-consensus paper with learned routing (paper Table 1).

    Conv 5x5 s2 VALID 64 + ReLU + BatchNorm -> PrimaryCaps (1x1, 8 types of 4x4 matrix poses, ReLU on
    the poses as in the code, sigmoid activations) -> ConvCaps1 (3x3 s2, 16 types) -> ConvCaps2 (3x3
    s1, 16 types) -> ClassCaps (``classes`` capsules, one transform per child position and type,
    not shared) -> class activations as scores. Every capsule layer uses the paper's vote transform
    ``v_ij = (W_ij / |W_ij|_F) P_i`` (``W`` left-multiplies the pose, Frobenius-normalised,
    initialised ``I + U(-0.1, 0.1)`` with :class:`~keras_capsules.layers.initializers.IdentityPlusUniform`).
    On the 32x32 smallNORB crop: 14x14x64 -> 14x14x8 -> 6x6x16 -> 4x4x16 -> 5.

    ``router``:

    - ``"kernel"`` (similarity learning): spectral-mixture kernels with Q = 4, 4, 10 components;
    - ``"lstm"`` (connectionist): 16-unit LSTM cells with compatibility/activation MLPs
      ``[]/[]``, ``[32, 32]/[64, 64]``, ``[64, 64]/[124, 124]``;
    - ``"em"``: EM routing (the paper's baseline), betas initialised truncated-normal(0.1) as in
      the inner-consensus code's ``emRouting.py``, otherwise the EM router's (IBM's) defaults;
    - any other registered router that routes matrix poses (``routing.available(pose="matrix")``),
      or a config dict or ``Router`` instance: used for all
      three routing layers, each getting its own router built from the spec.

    The scores are the class activations: with ``"kernel"`` and ``"lstm"`` logits (the code's
    ``activate=False`` under its default softmax loss; ``classifier_activation="softmax"`` gives
    probabilities); with ``"em"`` EM's probabilities in [0, 1] (for a spread or margin loss).

    Parameters: **86,408 excluding the routers' own parameters** (docs/reference/models.md#consensuscapsnet; conv 1,664,
    BatchNorm 128, primary 8,840, ConvCaps1 18,432, ConvCaps2 36,864, ClassCaps 20,480), which
    :func:`routing_parameter_count` separates; with routers: 87,187 trainable (kernel), 126,226
    (lstm) and 86,482 (em); plus 128 BatchNorm statistics.

    Not reproduced: the configs' ``coordinate_addition`` flag on the conv capsule layers (that code
    was not inspected; docs/reference/routers.md#learned-routing-inner-consensus); the Frobenius norm uses ``sqrt(sum W^2 + 1e-5)`` without
    the code's extra ``+ 1e-6``.

    Args:
        include_top: with the capsule layers and class scores; otherwise the ConvCaps2 capsules as
            a ``(batch, 4, 4, 256)`` feature map (see ``pooling``).
        weights: ``None`` or the path of a local weights file.
        input_tensor: optional Keras tensor to use as the image input.
        input_shape: ``(H, W, C)``, default ``(32, 32, 1)``; H and W at least 17.
        pooling: with ``include_top=False``: ``None``, ``"avg"`` or ``"max"``.
        classes: number of class capsules (5 for smallNORB).
        classifier_activation: ``None`` (default: the class activations) or an activation applied by
            the output layer ``"predictions"``.
        name: model name.
        include_preprocessing: take images in [0, 255] and rescale them inside the model.
        router: ``"kernel"``, ``"lstm"``, ``"em"`` or another router of ``routing.available(pose="matrix")``.
        routing_iterations: replaces every router's iterations (``None``: the router's own; paper: 3).
        primary_pose_activation: ``"relu"`` (the code) or ``"linear"`` on the primary poses.
        transform_initializer: initializer of every capsule layer's vote transforms ``W`` (shape
            ``(..., 4, 4)``); ``None``: the paper's ``I + U(-0.1, 0.1)``. Routers without learned
            parameters of their own (``"dynamic"``) see nearly the same votes at every parent type from
            that start; a random one (``"random_normal"``; the scale is normalised away) breaks the tie.

    Returns:
        A built :class:`~keras_capsules.applications.CapsuleClassifier` taking images in [0, 1]
        ([0, 255] with ``include_preprocessing=True``; the paper standardises smallNORB crops).
    """
    return builder.build(APPLICATION, locals())


SOURCE = (
    "docs/reference/models.md#consensuscapsnet (inner-consensus paper, Table 1): 86,408 excluding routing parameters"
)
#: The small arguments the registry-wide contract test builds each configuration with.
TEST_SETTINGS = {"input_shape": (17, 17, 1), "classes": 3}
for _router, _routing_params, _what in (
    ("kernel", 779, "kernel-routing parameters (Q = 4, 4, 10)"),
    ("lstm", 39_818, "LSTM-routing parameters (3 cells and MLPs, Table 2)"),
    ("em", 74, "EM-routing parameters (beta_a, beta_u per output type)"),
):
    register_configuration(
        f"ConsensusCapsNet/smallnorb-{_router}",
        ConsensusCapsNet,
        {"router": _router},
        trainable_params=86_408 + _routing_params,
        total_params=86_408 + _routing_params + 128,
        source=SOURCE + f" + {_routing_params:,} {_what}",
        test_settings=TEST_SETTINGS,
    )
