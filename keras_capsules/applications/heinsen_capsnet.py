"""Heinsen's smallNORB capsule network (Heinsen 2019, "An Algorithm for Routing Capsules in All Domains") (docs/applications/heinsen_capsnet.md)."""

from collections.abc import Callable, Sequence

import keras
from keras import ops

from keras_capsules import routing
from keras_capsules.applications import builder, io
from keras_capsules.applications.classifier import CapsuleClassifier
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import FcCaps
from keras_capsules.presets import with_presets
from keras_capsules.routing import Router
from keras_capsules.serialization import register

preprocess_input = io.preprocess_input
decode_predictions = io.decode_predictions

#: Channels of the six 3x3 convolutions (the code's ``d_chns``) and the number of part capsules (``n_parts``).
CHANNELS, PARTS = 64, 64
#: The strides of the six convolutions.
STRIDES = (1, 2, 1, 2, 1, 2)
_POSE = 16  # 4x4 matrix poses, stored flat
#: PyTorch's BatchNorm defaults (momentum 0.1 of the new statistics) in Keras' terms.
_BATCH_NORM = {"momentum": 0.9, "epsilon": 1e-5}
#: The code's transforms ``W``: ``normal() / d_inp`` with ``d_inp = 4``.
_TRANSFORM_INIT = {"class_name": "RandomNormal", "config": {"mean": 0.0, "stddev": 0.25}}


@register
class CoordinateChannels(keras.layers.Layer):
    """Appends two channels with each pixel's row and column coordinates, evenly spaced in [-1, 1].

    ``(batch, H, W, C)`` -> ``(batch, H, W, C + 2)``: channel ``C`` holds the row coordinate
    (``-1`` at the top row, ``1`` at the bottom one), channel ``C + 1`` the column coordinate (the official
    code's ``add_coord_grid``; ``linspace(-1, 1, 1)`` is ``-1`` for a dimension of one pixel).
    """

    def call(self, images):
        height, width = images.shape[1], images.shape[2]
        rows = ops.linspace(-1.0, 1.0, height) if height > 1 else -ops.ones((1,))
        cols = ops.linspace(-1.0, 1.0, width) if width > 1 else -ops.ones((1,))
        grid = ops.stack(
            [ops.broadcast_to(rows[:, None], (height, width)), ops.broadcast_to(cols[None, :], (height, width))],
            axis=-1,
        )
        grid = ops.broadcast_to(ops.cast(grid, images.dtype)[None], (ops.shape(images)[0], height, width, 2))
        return ops.concatenate([images, grid], axis=-1)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (input_shape[-1] + 2,)


def _min_size():
    """The smallest height and width the six valid 3x3 convolutions leave at least one pixel of (29)."""
    size = 1
    for stride in reversed(STRIDES):
        size = (size - 1) * stride + 3
    return size


def _body(x, a):
    """Coordinates -> 6 x (BatchNorm, 3x3 conv, Swish) -> part scores and poses -> 64 part capsules -> class capsules."""

    def router(share_children):
        spec = a.router
        defaults = {"share_children": True} if share_children and routing.router_name(spec) == "heinsen" else None
        return routing.resolve(spec, a.routing_iterations, owner="HeinsenCapsNet", defaults=defaults)

    x = CoordinateChannels(name="coordinates")(x)
    for index, stride in enumerate(STRIDES, start=1):
        x = keras.layers.BatchNormalization(name=f"conv{index}_bn", **_BATCH_NORM)(x)
        x = keras.layers.Conv2D(CHANNELS, 3, strides=stride, kernel_initializer="he_normal", name=f"conv{index}")(x)
        x = keras.layers.Activation("silu", name=f"conv{index}_swish")(x)
    grid = tuple(x.shape[1:3])
    scores = keras.layers.BatchNormalization(name="part_scores_bn", **_BATCH_NORM)(x)
    scores = keras.layers.Conv2D(PARTS, 1, name="part_scores")(scores)
    activations = keras.layers.Activation("sigmoid", name="part_activations")(scores)  # f(a_inp)
    poses = keras.layers.BatchNormalization(name="part_poses_bn", **_BATCH_NORM)(x)
    poses = keras.layers.Conv2D(PARTS * _POSE, 1, name="part_poses")(poses)
    poses = keras.layers.Reshape(grid + (PARTS, _POSE), name="part_poses_split")(poses)
    parts = FcCaps(
        PARTS,
        transform="matrix",
        shared_weights=True,
        kernel_initializer=_TRANSFORM_INIT,
        router=router(share_children=True),
        name="part_caps",
    )((poses, activations))
    class_layer = FcCaps(
        a.classes, transform="matrix", kernel_initializer=_TRANSFORM_INIT, router=router(False), name="class_caps"
    )
    return builder.Network(parts, class_layer, scores=builder.class_activations)


APPLICATION = builder.Application(
    "HeinsenCapsNet",
    _body,
    input_shape=(96, 96, 2),
    min_size=_min_size(),
    default_router="heinsen",
    router_needs={"pose": "matrix"},
)


@with_presets("HeinsenCapsNet")
def HeinsenCapsNet(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: Sequence[int] | None = None,
    pooling: str | None = None,
    classes: int = 5,
    classifier_activation: str | Callable | None = None,
    name: str = "heinsen_capsnet",
    include_preprocessing: bool = False,
    router: str | dict | Router | None = None,
    routing_iterations: int | None = None,
) -> CapsuleClassifier:
    """Heinsen's smallNORB network, as the official code's ``SmallNORBClassifier(n_objs=5, n_parts=64, d_chns=64)`` builds it.

    Two coordinate channels (row and column, in [-1, 1]) are appended to the image -> six times BatchNorm,
    3x3 convolution (64 channels, strides 1, 2, 1, 2, 1, 2, VALID, with bias) and Swish -> part scores
    (BatchNorm, 1x1 convolution to 64 channels; their sigmoid is the part activations) and part poses
    (BatchNorm, 1x1 convolution to 64 4x4 matrices) at every position -> 64 part capsules routed from all
    ``64 H' W'`` of them with one transform ``W_j`` and one ``beta_use``, ``beta_ign`` and vote bias per
    part, shared by every child -> ``classes`` class capsules with a transform, gains and bias per part and
    class. Both capsule layers route with :class:`~keras_capsules.routing.HeinsenRouter` (3 iterations);
    the class capsules' activations are the scores. On the code's full 96x96 stereo pairs (``(96, 96, 2)``)
    the convolutions leave a 9x9 grid: 5,184 children for the part capsules.

    Parameters with 5 classes (any input size: every weight is shared across positions): **271,688**
    trainable, as the official model counts them in PyTorch (``sum(p.numel() for p in
    model.parameters())``, run by us): the convolutions 187,008 with their BatchNorms
    (8 + 5 x 128), the part-score and part-pose branches 4,160 + 66,560 with theirs (2 x 128), the part
    routing 2,176 (``W`` 1,024, ``B`` 1,024, ``beta_use`` and ``beta_ign`` 64 each) and the class routing
    10,880 (``W`` and ``B`` 5,120 each, the gains 320 each). The 904 non-trainable values are the
    BatchNorms' moving statistics (the code's running statistics): 272,592 in total.

    Initialisation as the code: the 3x3 convolutions He-normal with zero biases, the 1x1 convolutions
    Glorot-uniform (PyTorch's default differs: Kaiming-uniform with a=sqrt(5)), the transforms
    ``N(0, 1/4^2)`` (``normal() / d_inp``), gains and biases zeros. The code trains with a softmax
    cross-entropy on the class *scores* ``a_out``, the logits of this model's class activations
    (``log(p / (1 - p))``), with mixup, RAdam 5e-4 and batches of 20 for 50 epochs.

    Args:
        include_top: with the class capsules; otherwise the 64 part capsules flattened to ``(batch, 64*16)``.
        weights: ``None`` or the path of a local weights file.
        input_tensor: optional Keras tensor used as the image input.
        input_shape: ``(H, W, C)``, default ``(96, 96, 2)`` (the two stereo images of a smallNORB example;
            ``(H, W, 1)`` for one); H and W at least 29.
        pooling: must be ``None`` (the part capsules are fully connected).
        classes: number of class capsules (smallNORB: 5).
        classifier_activation: ``None`` (default: the scores are the class activations, in [0, 1]) or an
            activation applied by the output layer ``"predictions"``.
        name: model name.
        include_preprocessing: take images in [0, 255] and rescale them inside the model.
        router: router of the capsule layers, any of ``routing.available(pose="matrix")`` (name, config dict
            or ``Router``; ``None``: Heinsen routing). Each layer gets its own router built from the spec; a
            ``"heinsen"`` spec routes the part capsules with ``share_children=True`` unless it says otherwise.
        routing_iterations: replaces the router's iterations (``None``: the router's own, 3 for Heinsen routing).

    Returns:
        A built :class:`~keras_capsules.applications.CapsuleClassifier` mapping images in [0, 1]
        ([0, 255] with ``include_preprocessing=True``) to ``(batch, classes)`` scores.
    """
    return builder.build(APPLICATION, locals())


register_configuration(
    "HeinsenCapsNet/smallnorb",
    HeinsenCapsNet,
    {},
    trainable_params=271_688,
    total_params=272_592,
    source="the official SmallNORBClassifier(n_objs=5, n_parts=64, d_chns=64) (github.com/glassroom/heinsen_routing, "
    "models.py of the 2019 release) counted in PyTorch: trainable; total adds the 904 BatchNorm "
    "running statistics",
    test_settings={"input_shape": (29, 29, 2), "classes": 3},
)
