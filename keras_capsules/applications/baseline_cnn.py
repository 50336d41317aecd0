"""Plain CNN baselines for the capsule models: one matched to Efficient-CapsNet's size, and the CapsNet paper's.

``"matched"`` answers "is a capsule network better than a CNN of the same size?": Efficient-CapsNet's
MNIST network has 161,824 trainable parameters; this CNN has exactly as many (and the same 162,400 in
all, with the BatchNorm statistics). ``"capsnet_paper"`` is the baseline CNN of Sabour, Frosst &
Hinton (2017), section 5, with its 35.4M parameters.
"""

import os
from typing import Any, Callable

import keras

from keras_capsules import errors
from keras_capsules.applications import builder, io
from keras_capsules.applications.classifier import CapsuleClassifier
from keras_capsules.applications.registry import register_configuration
from keras_capsules.presets import with_presets

preprocess_input = io.preprocess_input
decode_predictions = io.decode_predictions

#: Per variant: input shape, convolutions (filters, kernel, stride), padding, BatchNorm after each
#: convolution, the top's global pooling (``None``: flatten), hidden dense widths, dropout before the
#: class layer, smallest input height and width.
VARIANTS: dict[str, dict[str, Any]] = {
    # Efficient-CapsNet's MNIST stem (same kernels, strides, channels, valid padding), bias-free convolutions
    # before BatchNorm (its beta is the bias), then global average pooling and a 226-wide hidden layer: the
    # one width for which the count is Efficient-CapsNet's 161,824 (see the registration below).
    "matched": dict(
        input_shape=(28, 28, 1),
        convs=((32, 5, 1), (64, 3, 1), (64, 3, 1), (128, 3, 2)),
        padding="valid",
        batch_norm=True,
        top_pooling="avg",
        hidden=(226,),
        dropout=0.0,
        min_size=11,
    ),
    # Sabour et al. 2017, section 5: 5x5 stride-1 convolutions of 256, 256, 128 channels, fully connected 328
    # and 192, dropout, softmax. "same" padding and no pooling give the paper's 35.4M parameters; the
    # paper states neither, nor the dropout rate (0.5 here).
    "capsnet_paper": dict(
        input_shape=(28, 28, 1),
        convs=((256, 5, 1), (256, 5, 1), (128, 5, 1)),
        padding="same",
        batch_norm=False,
        top_pooling=None,
        hidden=(328, 192),
        dropout=0.5,
        min_size=1,
    ),
}


def _features(x, settings):
    """The convolutions: ``(batch, H, W, C)`` -> ``(batch, H', W', filters)`` of the last one."""
    for i, (filters, kernel, stride) in enumerate(settings["convs"], 1):
        bn = settings["batch_norm"]
        x = keras.layers.Conv2D(
            filters,
            kernel,
            strides=stride,
            padding=settings["padding"],
            use_bias=not bn,
            activation=None if bn else "relu",
            kernel_initializer="he_normal",
            name=f"conv{i}",
        )(x)
        if bn:
            x = keras.layers.BatchNormalization(name=f"bn{i}")(x)
            x = keras.layers.ReLU(name=f"relu{i}")(x)
    return x


def _check(a):
    errors.check_one_of("BaselineCNN", "variant", a.variant, tuple(VARIANTS))
    a.dropout = VARIANTS[a.variant]["dropout"] if a.dropout is None else a.dropout
    if not (errors.is_number(a.dropout) and 0 <= a.dropout < 1):
        errors.fail("BaselineCNN", "dropout", "None or a number in [0, 1)", a.dropout)


def _body(x, a):
    """The convolutions; the top pools or flattens them into the dense layers and the ``"logits"`` layer."""
    settings = VARIANTS[a.variant]

    def head(x):
        if settings["top_pooling"] == "avg":
            x = keras.layers.GlobalAveragePooling2D(name="avg_pool")(x)
        else:
            x = keras.layers.Flatten(name="flatten")(x)
        for i, width in enumerate(settings["hidden"], 1):
            x = keras.layers.Dense(width, activation="relu", kernel_initializer="he_normal", name=f"fc{i}")(x)
        if a.dropout:
            x = keras.layers.Dropout(a.dropout, name="dropout")(x)
        return keras.layers.Dense(a.classes, name="logits")(x)

    return builder.Network(_features(x, settings), head=head)


APPLICATION = builder.Application(
    "BaselineCNN",
    _body,
    input_shape=lambda a: VARIANTS[a.variant]["input_shape"],
    min_size=lambda a: VARIANTS[a.variant]["min_size"],
    check=_check,
)


@with_presets("BaselineCNN")
def BaselineCNN(
    include_top: bool = True,
    weights: str | os.PathLike | None = None,
    input_tensor: Any = None,
    input_shape: tuple[int | None, int | None, int | None] | None = None,
    pooling: str | None = None,
    classes: int = 10,
    classifier_activation: str | Callable | None = None,
    name: str = "baseline_cnn",
    include_preprocessing: bool = False,
    variant: str = "matched",
    dropout: float | None = None,
) -> CapsuleClassifier:
    """A plain CNN baseline: ``"matched"`` (Efficient-CapsNet's size) or ``"capsnet_paper"`` (Sabour et al.'s).

    ``"matched"`` (161,824 trainable parameters on 28x28x1 with 10 classes, Efficient-CapsNet's MNIST
    count): Efficient-CapsNet's stem, Conv 5x5x32 -> 3x3x64 -> 3x3x64 -> 3x3x128 stride 2 (valid
    padding, no bias, each BatchNorm then ReLU; 28x28 -> 9x9x128) -> global average pooling ->
    Dense 226 ReLU -> Dense ``classes``. The global pooling keeps the count independent of the input
    size (also 161,824 on 40x40 ``expanded_mnist``).

    ``"capsnet_paper"`` (35,445,522 parameters on 28x28x1): Conv 5x5x256 -> 5x5x256 -> 5x5x128
    (stride 1, "same" padding, ReLU; 28x28x128) -> flatten -> Dense 328 ReLU -> Dense 192 ReLU ->
    Dropout 0.5 -> Dense ``classes``. The flattened features make the count depend on the input size.

    Args:
        include_top, weights, input_tensor, input_shape, pooling, classes, name: as in Keras
            Applications. With ``include_top=False`` the output is the last convolution's
            ``(batch, H', W', C)`` map (9x9x128 and 28x28x128 on 28x28 images), globally pooled to
            ``(batch, C)`` by ``pooling="avg"``/``"max"``.
        classifier_activation: ``None`` (default: logits) or an activation applied by the output
            layer ``"predictions"``, e.g. ``"softmax"``.
        include_preprocessing: take images in [0, 255] and rescale them inside the model.
        variant: ``"matched"`` or ``"capsnet_paper"``.
        dropout: rate of the dropout before the class layer (``None``: the variant's, 0 for
            ``"matched"`` and 0.5 for ``"capsnet_paper"``).

    Returns:
        A built :class:`~keras_capsules.applications.CapsuleClassifier` (no decoder) taking images in
        [0, 1] ([0, 255] with ``include_preprocessing=True``).
    """
    return builder.build(APPLICATION, locals())


register_configuration(
    "BaselineCNN/matched",
    BaselineCNN,
    {"variant": "matched"},
    trainable_params=161_824,
    total_params=162_400,
    source="Efficient-CapsNet's MNIST count (161,824; 162,400 with BatchNorm statistics), reached by hand: convolutions "
    "800 + 18,432 + 36,864 + 73,728, BatchNorm gamma and beta 64 + 128 + 128 + 256, Dense 128x226 + 226 = 29,154, "
    "Dense 226x10 + 10 = 2,270",
    test_settings={"classes": 3},
)
register_configuration(
    "BaselineCNN/capsnet_paper",
    BaselineCNN,
    {"variant": "capsnet_paper"},
    trainable_params=35_445_522,
    total_params=35_445_522,
    source="Sabour et al. 2017 section 5, '35.4M': convolutions 6,656 + 1,638,656 + 819,328 (same padding, no pooling), "
    "Dense 100,352x328 + 328 = 32,915,784, 328x192 + 192 = 63,168, 192x10 + 10 = 1,930",
    roundtrip=False,  # 142 MB of float32 weights: the .keras round trip is tested on the matched variant
    test_settings={"classes": 3, "input_shape": (6, 6, 1)},
)
