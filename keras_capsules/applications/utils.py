"""Argument validation and assembly shared by every application constructor (Keras Applications style)."""

import os
import warnings
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import numpy.typing as npt
from keras import ops

from keras_capsules import errors

POOLINGS = (None, "avg", "max")


def validate_application_args(
    model_name,
    *,
    include_top,
    weights,
    input_tensor,
    input_shape,
    pooling,
    classes,
    classifier_activation,
    default_shape,
    min_size,
    fixed_size=False,
):
    """Validates the Keras Applications arguments and returns the input shape ``(H, W, C)``.

    Args:
        model_name: the constructor name used in error messages.
        default_shape: the paper's input shape.
        min_size: smallest allowed height and width.
        fixed_size: when the top needs exactly ``default_shape`` spatially (capsule models whose
            class layer has one weight per child cannot take another size).

    Raises:
        ValueError: for a weights value that is neither ``None`` nor an existing file, a bad
            pooling, non-positive classes, or an input shape that is not 3-D, too small, or
            (with ``include_top``) not fully defined.
    """
    if not (weights is None or (isinstance(weights, (str, os.PathLike)) and os.path.isfile(weights))):
        raise ValueError(
            f"{model_name}: argument `weights` expected None (random initialisation), the path to an existing "
            f"weights file, or a preset name (keras_capsules.presets.available()), received {weights!r}."
        )
    if not errors.is_integer(classes) or classes < 1:
        raise ValueError(f"{model_name}: argument `classes` expected a positive integer, received {classes!r}.")
    if pooling not in POOLINGS:
        raise ValueError(f"{model_name}: argument `pooling` expected one of None, 'avg', 'max', received {pooling!r}.")
    if classifier_activation is not None:
        try:
            keras.activations.get(classifier_activation)
        except (ValueError, TypeError):
            raise ValueError(
                f"{model_name}: argument `classifier_activation` expected None or a Keras activation, "
                f"received {classifier_activation!r}."
            ) from None
    if input_shape is None and input_tensor is not None:
        input_shape = tuple(input_tensor.shape[1:])
    if input_shape is None:
        input_shape = default_shape
    input_shape = tuple(input_shape)
    if len(input_shape) != 3 or not all(size is None or errors.is_integer(size) for size in input_shape):
        raise ValueError(f"{model_name}: argument `input_shape` expected a 3-tuple (height, width, channels) of integers, received {input_shape!r}.")
    input_shape = tuple(None if size is None else int(size) for size in input_shape)  # np.int64 -> int: JSON configs
    height, width, channels = input_shape
    if None in (height, width):
        raise ValueError(
            f"{model_name}: argument `input_shape` expected a fully defined shape (known height and width: the capsule layers "
            f"turn the feature grid into a fixed number of capsules, so variable image sizes are not supported, with or "
            f"without the top), received {input_shape!r}."
        )
    if include_top and channels is None:
        raise ValueError(f"{model_name}: argument `input_shape` expected a fully defined shape when include_top=True, received {input_shape!r}.")
    if channels is not None and channels < 1:
        raise ValueError(f"{model_name}: argument `input_shape` expected a positive number of channels, received {input_shape!r}.")
    for size in (height, width):
        if size is not None and size < min_size:
            raise ValueError(f"{model_name}: argument `input_shape` expected height and width >= {min_size}, received {input_shape!r}.")
    if fixed_size and include_top and (height, width) != tuple(default_shape[:2]):
        raise ValueError(
            f"{model_name}: argument `input_shape` expected height and width {tuple(default_shape[:2])} with include_top=True "
            f"(the class-capsule layer has one transform per child), received {input_shape!r}."
        )
    if channels not in (1, 2, 3) and channels is not None:
        warnings.warn(f"{model_name}: input_shape has {channels} channels; the paper configurations use 1, 2 or 3.", stacklevel=3)
    return input_shape


def model_inputs(input_tensor, input_shape, include_preprocessing=False):
    """Returns ``(model_inputs, x)`` from an optional ``input_tensor`` (Keras Applications rule).

    With ``include_preprocessing`` the model takes images in [0, 255] and ``x`` is rescaled to
    [0, 1] by a ``Rescaling`` layer named ``"rescaling"`` (as Keras' EfficientNet does).
    """
    if input_tensor is None:
        inputs = x = keras.Input(shape=input_shape)
    elif not keras.backend.is_keras_tensor(input_tensor):
        inputs = x = keras.Input(tensor=input_tensor, shape=input_shape)
    else:
        sources = keras.utils.get_source_inputs(input_tensor)
        inputs, x = (sources[0] if len(sources) == 1 else sources), input_tensor
    if include_preprocessing:
        x = keras.layers.Rescaling(1.0 / 255.0, name="rescaling")(x)
    return inputs, x


def check_router(model_name, router, hint="", **capabilities):
    """The registered name of ``router`` (a name, config dict or ``Router``), which must have ``capabilities``.

    Args:
        model_name: the constructor name used in error messages.
        router: the router spec.
        hint: appended to the error, e.g. how to use the other routers.
        **capabilities: the filters of :func:`keras_capsules.routing.available` the model needs,
            e.g. ``pose="matrix"`` for matrix capsule layers.

    Raises:
        ValueError: the router is not registered, or lacks a capability the model needs; the error
            lists the registered routers that fit.
        TypeError: ``router`` is not a router spec.
    """
    from keras_capsules import routing

    try:
        name = routing.router_name(router)
    except (ValueError, TypeError) as error:
        raise type(error)(f"{model_name}: argument `router`: {error}") from None
    fitting = routing.available(**capabilities)
    if name not in fitting:
        needs = ", ".join(f"{key}={value!r}" for key, value in capabilities.items())
        reason = "that is not a registered router" if name not in routing.available() else f"router {name!r} lacks one of them"
        raise ValueError(
            f"{model_name}: argument `router` expected a registered router with the capabilities this model needs "
            f"(routing.available({needs}): {fitting}), received {router!r}: {reason}{hint}."
        )
    return name


def check_pooling(model_name, include_top, pooling):
    """``pooling`` pools the ``include_top=False`` features only; with the top it must be ``None``."""
    if include_top and pooling is not None:
        raise ValueError(
            f"{model_name}: argument `pooling` expected None with include_top=True (it pools the include_top=False "
            f"features), received {pooling!r}."
        )


def feature_output(model_name, poses, pooling, name):
    """The ``include_top=False`` output: the capsules that feed the class layer, flattened per position.

    Grid poses ``(batch, H, W, types, dim)`` become a ``(batch, H, W, types*dim)`` map, global-pooled
    to ``(batch, types*dim)`` by ``pooling="avg"``/``"max"``; fully connected poses
    ``(batch, caps, dim)`` become ``(batch, caps*dim)``.

    Raises:
        ValueError: ``pooling`` is not ``None`` for fully connected capsules (no positions to pool).
    """
    if len(poses.shape) == 5:
        h, w, t, d = poses.shape[1:]
        return pooled_features(keras.layers.Reshape((h, w, t * d), name=f"{name}_features")(poses), pooling)
    if pooling is not None:
        raise ValueError(
            f"{model_name}: argument `pooling` expected None with include_top=False (the features are "
            f"{poses.shape[1]} fully connected capsules, with no positions to pool), received {pooling!r}."
        )
    caps, dim = poses.shape[1:]
    return keras.layers.Reshape((caps * dim,), name=f"{name}_features")(poses)


def pooled_features(feature_map, pooling):
    """``feature_map`` ``(batch, H, W, C)`` as is (``pooling=None``) or globally pooled to ``(batch, C)``."""
    if pooling == "avg":
        return keras.layers.GlobalAveragePooling2D(name="avg_pool")(feature_map)
    if pooling == "max":
        return keras.layers.GlobalMaxPooling2D(name="max_pool")(feature_map)
    return feature_map


def predictions(scores, classifier_activation):
    """The output layer ``"predictions"``: ``classifier_activation`` on the scores (``None``: identity)."""
    return keras.layers.Activation("linear" if classifier_activation is None else classifier_activation, name="predictions")(scores)


def load_weights(model, weights):
    """Loads the weights file ``weights`` (a path) into ``model``; ``None`` leaves the random initialisation.

    ``.npz`` files are read as preset files (weights keyed by layer name, see
    :mod:`keras_capsules.presets`); other files go through ``model.load_weights`` (``.weights.h5``).
    Preset *names* never reach this function: the constructor's ``with_presets`` wrapper loads them.
    """
    if weights is None:
        return model
    path = os.fspath(weights)
    if path.endswith(".npz"):
        from keras_capsules.presets import load_weights as load_preset_file

        load_preset_file(model, path)
        return model
    from keras_capsules.training.model_files import load_weights_file  # lazy: model_files imports the applications

    load_weights_file(model, path)  # ModelFileError naming the file when it is missing, corrupt or for another model
    return model


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """Scales uint8-range images to [0, 1] floats, the input range of every application built with
    ``include_preprocessing=False`` (the default, and what ``keras_capsules.datasets.load`` gives).

    Args:
        x: array or tensor of images with values in [0, 255].
        data_format: accepted for Keras Applications compatibility; images are channels-last.
    """
    del data_format
    return ops.cast(x, "float32") / 255.0


def decode_predictions(
    preds: npt.ArrayLike,
    top: int = 5,
    class_names: Sequence[str] | None = None,
) -> list[list[tuple[int, str, float]]]:
    """Turns class scores into ``[(class_index, class_name, score), ...]`` per example, best first.

    Args:
        preds: ``(batch, classes)`` scores (capsule lengths, probabilities or logits).
        top: how many classes to return per example (at most ``classes``).
        class_names: optional sequence of ``classes`` names; defaults to the class indices as strings
            (``keras_capsules.presets.decode_predictions`` takes them from a dataset or a preset).

    Returns:
        One list per example of ``min(top, classes)`` tuples ``(class index, class name, score)``,
        highest score first (equal scores: lower index first).
    """
    top = errors.check_positive_int("decode_predictions", "top", top)
    scores = np.asarray(preds)
    if scores.ndim != 2 or not np.issubdtype(scores.dtype, np.number):
        errors.fail("decode_predictions", "preds", "a 2-D array (batch, classes) of class scores", f"{scores.dtype} shape {scores.shape}")
    names = [str(i) for i in range(scores.shape[1])] if class_names is None else list(class_names)
    if len(names) != scores.shape[1]:
        errors.fail("decode_predictions", "class_names", f"{scores.shape[1]} names (one per class score)", f"{len(names)} names")
    order = np.argsort(-scores, axis=1, kind="stable")[:, :top]
    return [[(int(i), names[i], float(row[i])) for i in indices] for row, indices in zip(scores, order)]


def assemble(
    *,
    model_name,
    inputs,
    children,
    class_layer,
    include_top,
    pooling,
    classifier_activation,
    name,
    score_head=None,
    decoder=None,
    reconstruction_weight=0.0005,
    pixel_reduction="sum",
    mask_top_k=1,
):
    """Builds the :class:`~keras_capsules.applications.CapsuleClassifier` of a capsule application.

    Args:
        model_name: the constructor name used in error messages.
        inputs: the model inputs.
        children: the capsule tensor ``(poses, activations)`` that feeds the class layer.
        class_layer: the class-capsule layer (called on ``children``), named ``"class_caps"`` when
            there is a decoder (the decoder reads its poses).
        include_top: with the class layer and the ``"predictions"`` output, or the features of
            ``children`` only (see :func:`feature_output`).
        score_head: maps ``(class_poses, class_activations)`` to scores; default: capsule lengths.
        decoder: optional reconstruction decoder (with ``include_top`` only).

    Returns:
        A built ``CapsuleClassifier`` (the caller loads the weights).
    """
    from keras_capsules.applications.classifier import CapsuleClassifier
    from keras_capsules.layers.heads import Length

    check_pooling(model_name, include_top, pooling)
    if not include_top:
        return CapsuleClassifier(inputs, feature_output(model_name, children[0], pooling, name), name=name)
    class_poses, class_acts = class_layer(children)
    raw_scores = Length(name="length")(class_poses) if score_head is None else score_head(class_poses, class_acts)
    return CapsuleClassifier(
        inputs,
        predictions(raw_scores, classifier_activation),
        decoder=decoder,
        class_capsules=class_layer.name,
        reconstruction_weight=reconstruction_weight,
        pixel_reduction=pixel_reduction,
        mask_top_k=mask_top_k,
        name=name,
    )
