"""Argument validation and assembly shared by every application constructor (Keras Applications style)."""

import os
import warnings

import keras
import numpy as np
from keras import ops

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
            f"{model_name}: argument `weights` expected None (random initialisation) or the path to an existing "
            f"weights file, received {weights!r}. No pretrained weights are downloaded."
        )
    if isinstance(classes, bool) or not isinstance(classes, int) or classes < 1:
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
    if len(input_shape) != 3:
        raise ValueError(f"{model_name}: argument `input_shape` expected a 3-tuple (height, width, channels), received {input_shape!r}.")
    height, width, channels = input_shape
    if include_top and None in input_shape:
        raise ValueError(
            f"{model_name}: argument `input_shape` expected a fully defined shape when include_top=True, received {input_shape!r}."
        )
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


def model_inputs(input_tensor, input_shape):
    """Returns ``(model_inputs, x)`` from an optional ``input_tensor`` (Keras Applications rule)."""
    if input_tensor is None:
        inputs = keras.Input(shape=input_shape)
        return inputs, inputs
    if not keras.backend.is_keras_tensor(input_tensor):
        inputs = keras.Input(tensor=input_tensor, shape=input_shape)
        return inputs, inputs
    return keras.utils.get_source_inputs(input_tensor), input_tensor


def feature_output(poses, pooling, name):
    """The ``include_top=False`` output: the capsules that feed the class layer, flattened per position.

    Grid poses ``(batch, H, W, types, dim)`` become ``(batch, H, W, types*dim)`` (then global-pooled
    by ``pooling``); fully connected poses ``(batch, caps, dim)`` become ``(batch, caps*dim)``.
    """
    if len(poses.shape) == 5:
        h, w, t, d = poses.shape[1:]
        features = keras.layers.Reshape((h, w, t * d), name=f"{name}_features")(poses)
        if pooling == "avg":
            return keras.layers.GlobalAveragePooling2D(name="avg_pool")(features)
        if pooling == "max":
            return keras.layers.GlobalMaxPooling2D(name="max_pool")(features)
        return features
    caps, dim = poses.shape[1:]
    return keras.layers.Reshape((caps * dim,), name=f"{name}_features")(poses)


def class_scores(lengths, classifier_activation):
    """Applies ``classifier_activation`` (``None`` keeps the raw capsule lengths)."""
    if classifier_activation is None:
        return lengths
    return keras.layers.Activation(classifier_activation, name="predictions")(lengths)


def load_weights(model, weights):
    """Loads a local weights file when ``weights`` is a path."""
    if weights is not None:
        model.load_weights(weights)
    return model


def preprocess_input(x, data_format=None):
    """Scales uint8-range images to [0, 1] floats, the input range of every capsule application.

    Args:
        x: array or tensor of images with values in [0, 255].
        data_format: accepted for Keras Applications compatibility; images are channels-last.
    """
    del data_format
    return ops.cast(x, "float32") / 255.0


def decode_predictions(preds, top=5, class_names=None):
    """Turns class scores into ``[(class_name, index, score), ...]`` per example, best first.

    Args:
        preds: ``(batch, classes)`` scores (capsule lengths or probabilities).
        top: how many classes to return per example.
        class_names: optional sequence of names; defaults to the class indices as strings.
    """
    preds = np.asarray(preds)
    if preds.ndim != 2:
        raise ValueError(f"decode_predictions: argument `preds` expected shape (batch, classes), received shape {preds.shape}.")
    if class_names is not None and len(class_names) != preds.shape[1]:
        raise ValueError(
            f"decode_predictions: argument `class_names` expected {preds.shape[1]} names, received {len(class_names)}."
        )
    names = class_names if class_names is not None else [str(i) for i in range(preds.shape[1])]
    results = []
    for row in preds:
        order = np.argsort(-row)[:top]
        results.append([(names[i], int(i), float(row[i])) for i in order])
    return results


def assemble(
    *,
    inputs,
    children,
    class_layer,
    include_top,
    pooling,
    classifier_activation,
    name,
    weights,
    score_head=None,
    decoder=None,
    reconstruction_weight=0.0005,
    pixel_reduction="sum",
    mask_top_k=1,
):
    """Builds the final model of a capsule application.

    Args:
        inputs: the model inputs.
        children: the capsule tensor ``(poses, activations)`` that feeds the class layer.
        class_layer: the class-capsule layer (called on ``children``).
        include_top: with the class layer and scores, or the features of ``children`` only.
        score_head: maps ``(class_poses, class_activations)`` to scores; default: capsule lengths.
        decoder: optional reconstruction decoder; the result is then a :class:`CapsuleClassifier`.

    Returns:
        A built ``keras.Model`` (functional, or a ``CapsuleClassifier`` with a decoder).
    """
    from keras_capsules.applications.classifier import CapsuleClassifier
    from keras_capsules.layers.heads import Length

    if not include_top:
        model = keras.Model(inputs, feature_output(children[0], pooling, name), name=name)
        return load_weights(model, weights)
    class_poses, class_acts = class_layer(children)
    raw_scores = Length(name="length")(class_poses) if score_head is None else score_head(class_poses, class_acts)
    scores = class_scores(raw_scores, classifier_activation)
    if decoder is None:
        model = keras.Model(inputs, scores, name=name)
        return load_weights(model, weights)
    encoder = keras.Model(inputs, [scores, class_poses], name=f"{name}_encoder")
    model = CapsuleClassifier(
        encoder,
        decoder,
        reconstruction_weight=reconstruction_weight,
        pixel_reduction=pixel_reduction,
        mask_top_k=mask_top_k,
        name=name,
    )
    model.build((None,) + tuple(encoder.inputs[0].shape[1:]))
    model.trace()
    return load_weights(model, weights)
