"""SR-CapsNet, the CIFAR-10 network of Hahn, Pyeon and Kim (NeurIPS 2019, "Self-Routing Capsule Networks") (docs/applications/sr_capsnet.md)."""

from collections.abc import Callable, Sequence

import keras
from keras import ops

from keras_capsules import errors, routing
from keras_capsules.applications import builder, io
from keras_capsules.applications.classifier import CapsuleClassifier
from keras_capsules.applications.registry import register_configuration
from keras_capsules.presets import with_presets
from keras_capsules.routing import Router
from keras_capsules.serialization import register

preprocess_input = io.preprocess_input
decode_predictions = io.decode_predictions

#: Base channels of the ResNet-20 (the code's ``planes``), capsule types and pose size (``num_caps``, ``caps_size``).
PLANES, TYPES, POSE = 16, 32, 16
#: Basic blocks per stage of ResNet-20.
BLOCKS = 3
#: PyTorch's BatchNorm defaults (momentum 0.1 of the new statistics) in Keras' terms.
_BATCH_NORM = {"momentum": 0.9, "epsilon": 1e-5}


@register
class ZeroPadShortcut(keras.layers.Layer):
    """ResNet's parameter-free "option A" shortcut: every other pixel, channels zero-padded on both sides.

    ``(batch, H, W, C)`` -> ``(batch, ceil(H/2), ceil(W/2), C + 2 * (planes // 4))`` (the official
    ``x[:, :, ::2, ::2]`` padded with ``planes // 4`` zero channels before and after).
    """

    def __init__(self, planes, **kwargs):
        super().__init__(**kwargs)
        self.planes = errors.check_positive_int(self, "planes", planes)

    def call(self, x):
        pad = self.planes // 4
        return ops.pad(x[:, ::2, ::2, :], ((0, 0), (0, 0), (0, 0), (pad, pad)))

    def compute_output_shape(self, input_shape):
        batch, height, width, channels = input_shape
        half = [None if s is None else (s + 1) // 2 for s in (height, width)]
        return (batch, half[0], half[1], channels + 2 * (self.planes // 4))

    def get_config(self):
        return {**super().get_config(), "planes": self.planes}


@register
class SelfRoutedClasses(keras.layers.Layer):
    """The class layer of SR-CapsNet: every child capsule of the grid routed to the classes with no vote transform.

    The official ``SelfRouting2d(..., kernel_size=8, padding=0, pose_out=False)`` on the 8x8 grid sees all
    ``8 * 8 * types`` children at once and has no pose transform ``W1``: its gate reads the child's pose
    directly. Here each child's pose is its vote for every class, ``u_j|i = u_i``, and the router's gate
    ``W`` ``(children, classes, pose)`` and bias ``b`` ``(children, classes)`` are the code's ``W2`` and
    ``b2``.

    Input ``(poses (batch, H, W, types, pose), activations (batch, H, W, types))`` -> ``(poses (batch,
    classes, pose), activations (batch, classes))``, and with ``return_coupling=True`` the coupling
    ``(batch, H * W * types, classes)`` too (children in (row, column, type) order), which the
    interpretability tools read as an ``FcCaps`` layer's.

    Args:
        num_capsules: the classes.
        router: a router spec routing vector poses (``"self_routing"`` in the paper).
        routing_iterations: replaces the router's iterations (``None``: its own).
    """

    def __init__(self, num_capsules, router="self_routing", routing_iterations=None, **kwargs):
        super().__init__(**kwargs)
        self.num_capsules = errors.check_positive_int(self, "num_capsules", num_capsules)
        self.routing_iterations = routing_iterations
        self.router = routing.resolve(router, routing_iterations, owner=self)

    def build(self, input_shape):
        poses_shape = input_shape[0]
        if len(poses_shape) != 5 or None in poses_shape[1:]:
            errors.fail(self, "inputs", "grid poses (batch, H, W, types, pose) of known size", poses_shape)
        children = poses_shape[1] * poses_shape[2] * poses_shape[3]
        self.router.build((poses_shape[0], children, self.num_capsules, poses_shape[4]))

    def call(self, inputs, training=None, return_coupling=False):
        poses, activations = inputs
        children, dim = poses.shape[1] * poses.shape[2] * poses.shape[3], poses.shape[4]
        poses = ops.reshape(poses, (-1, children, 1, dim))
        votes = ops.broadcast_to(poses, (ops.shape(poses)[0], children, self.num_capsules, dim))
        activations = ops.reshape(activations, (-1, children))
        return tuple(self.router(votes, activations, training=training, return_coupling=return_coupling))

    def compute_output_shape(self, input_shape):
        batch, dim = input_shape[0][0], input_shape[0][4]
        return (batch, self.num_capsules, dim), (batch, self.num_capsules)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_capsules": self.num_capsules,
                "router": keras.saving.serialize_keras_object(self.router),
                "routing_iterations": self.routing_iterations,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["router"] = keras.saving.deserialize_keras_object(config["router"])
        return cls(**config)


def _conv(x, filters, strides, name):
    """3x3 convolution, padding 1, no bias, He-normal weights (the code keeps PyTorch's default, Kaiming-uniform with a=sqrt(5))."""
    return keras.layers.Conv2D(
        filters, 3, strides=strides, padding="same", use_bias=False, kernel_initializer="he_normal", name=name
    )(x)


def _basic_block(x, planes, strides, name):
    out = keras.layers.BatchNormalization(name=f"{name}_bn1", **_BATCH_NORM)(_conv(x, planes, strides, f"{name}_conv1"))
    out = keras.layers.ReLU(name=f"{name}_relu1")(out)
    out = keras.layers.BatchNormalization(name=f"{name}_bn2", **_BATCH_NORM)(_conv(out, planes, 1, f"{name}_conv2"))
    shortcut = ZeroPadShortcut(planes, name=f"{name}_shortcut")(x) if strides != 1 or x.shape[-1] != planes else x
    return keras.layers.ReLU(name=f"{name}_relu2")(keras.layers.Add(name=f"{name}_add")([out, shortcut]))


def _body(x, a):
    """ResNet-20 (16, 32, 64 channels) -> primary capsules (3x3 convolutions to activations and poses) -> classes."""
    x = keras.layers.BatchNormalization(name="stem_bn", **_BATCH_NORM)(_conv(x, PLANES, 1, "stem_conv"))
    x = keras.layers.ReLU(name="stem_relu")(x)
    for stage, planes in enumerate((PLANES, 2 * PLANES, 4 * PLANES), start=1):
        for block in range(BLOCKS):
            strides = 2 if stage > 1 and block == 0 else 1
            x = _basic_block(x, planes, strides, f"stage{stage}_block{block}")
    grid = tuple(x.shape[1:3])
    activations = keras.layers.BatchNormalization(name="primary_activations_bn", **_BATCH_NORM)(
        _conv(x, TYPES, 1, "primary_activations")
    )
    activations = keras.layers.Activation("sigmoid", name="primary_activations_sigmoid")(activations)
    poses = keras.layers.BatchNormalization(name="primary_poses_bn", **_BATCH_NORM)(
        _conv(x, TYPES * POSE, 1, "primary_poses")
    )
    poses = keras.layers.Reshape(grid + (TYPES, POSE), name="primary_poses_split")(poses)
    class_layer = SelfRoutedClasses(
        a.classes, router=a.router, routing_iterations=a.routing_iterations, name="class_caps"
    )
    return builder.Network((poses, activations), class_layer, scores=builder.class_activations)


APPLICATION = builder.Application(
    "SRCapsNet",
    _body,
    input_shape=(32, 32, 3),
    min_size=32,
    fixed_size=True,
    default_router="self_routing",
    router_needs={"pose": "vector"},
)


@with_presets("SRCapsNet")
def SRCapsNet(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: Sequence[int] | None = None,
    pooling: str | None = None,
    classes: int = 10,
    classifier_activation: str | Callable | None = None,
    name: str = "sr_capsnet",
    include_preprocessing: bool = False,
    router: str | dict | Router | None = None,
    routing_iterations: int | None = None,
) -> CapsuleClassifier:
    """SR-CapsNet on CIFAR-10, as the official code's ``resnet20(16, {'channels': 3, 'classes': 10}, 32, 16, 1, mode='SR')`` builds it.

    ResNet-20 (a 3x3 convolution to 16 channels, BatchNorm, ReLU, then three stages of three basic blocks
    with 16, 32 and 64 channels, the second and third starting with stride 2; parameter-free zero-padding
    shortcuts) -> primary capsules on the 8x8 grid: activations ``sigmoid(BN(conv3x3(x)))`` for 32 types and
    poses ``BN(conv3x3(x))`` of 32 x 16 (convolutions without bias) -> 10 class capsules routed from all
    ``8 * 8 * 32 = 2,048`` children by :class:`~keras_capsules.routing.SelfRoutingRouter` with no vote
    transform (the code's ``SelfRouting2d(32, 10, 16, 1, kernel_size=8, padding=0, pose_out=False)``; see
    :class:`SelfRoutedClasses`). The scores are the class activations; the code trains on their logarithm
    with the negative log-likelihood.

    Parameters: **931,664** trainable, as the official model counts them in PyTorch (``sum(p.numel() for
    p in model.parameters())``, run by us): the ResNet-20 269,072 (stem 432 + 32, stages 14,016, 51,072 and
    203,520), the primary capsules 18,432 + 64 and 294,912 + 1,024, the class routing 348,160 (``W``
    2,048 x 10 x 16 = 327,680 and ``b`` 20,480). The 2,464 non-trainable values are the BatchNorms' moving
    statistics: 934,128 in total.

    Args:
        include_top: with the class capsules; otherwise the primary capsules as a ``(batch, 8, 8, 32*16)`` map.
        weights: ``None`` or the path of a local weights file.
        input_tensor: optional Keras tensor used as the image input.
        input_shape: ``(32, 32, C)`` (the class layer has one gate per child of the 8x8 grid).
        pooling: ``None``, ``"avg"`` or ``"max"`` with ``include_top=False``.
        classes: number of class capsules (CIFAR-10: 10).
        classifier_activation: ``None`` (default: the class activations, which sum to 1) or an activation
            applied by the output layer ``"predictions"``.
        name: model name.
        include_preprocessing: take images in [0, 255] and rescale them inside the model.
        router: router of the class layer, any of ``routing.available(pose="vector")`` (``None``: self-routing).
        routing_iterations: replaces the router's iterations (``None``: the router's own).

    Returns:
        A built :class:`~keras_capsules.applications.CapsuleClassifier` mapping images in [0, 1]
        ([0, 255] with ``include_preprocessing=True``) to ``(batch, classes)`` scores.
    """
    return builder.build(APPLICATION, locals())


register_configuration(
    "SRCapsNet/cifar10",
    SRCapsNet,
    {},
    trainable_params=931_664,
    total_params=934_128,
    source="the official resnet20(16, {'channels': 3, 'classes': 10}, 32, 16, 1, mode='SR') "
    "(github.com/coder3000/SR-CapsNet, models/resnet.py) counted in PyTorch: trainable; total adds the 2,464 "
    "BatchNorm running statistics",
    test_settings={"classes": 3},
)
