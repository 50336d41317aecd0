"""The one builder behind every application constructor (as ``keras/src/applications/resnet.py`` has ``ResNet``).

An application module declares an :class:`Application` (its name, paper input shape and smallest
size, default router and the capabilities it needs) with a *body*: the function that builds its
network on the input and returns a :class:`Network` (the features and the layers on top). Its
constructor keeps the Keras Applications signature and docstring and returns
``build(APPLICATION, locals())``. :func:`build` runs what every constructor shares: argument
validation, the router check, inputs and preprocessing, the body, the top / pooling / decoder /
``classifier_activation`` assembly, the record of the call (:func:`constructor_record`, which
``presets.save`` writes to a preset folder), and the weights file. Preset names and preset folders are
the constructor's ``with_presets`` wrapper's.
"""

import dataclasses
import json
import os
import types
import warnings
from collections.abc import Callable
from typing import Any

import keras
import numpy as np

from keras_capsules import errors, presets, routing
from keras_capsules.applications.classifier import CapsuleClassifier
from keras_capsules.layers.heads import Length
from keras_capsules.saving import load_weights_file

POOLINGS = (None, "avg", "max")


def capsule_lengths(poses: Any, activations: Any) -> Any:
    """Class scores ``(batch, classes)``: the lengths of the class poses (a ``Length`` layer named ``"length"``)."""
    return Length(name="length")(poses)


def class_activations(poses: Any, activations: Any) -> Any:
    """Class scores ``(batch, classes)``: the class capsules' activations."""
    return activations


@dataclasses.dataclass(frozen=True)
class Network:
    """What an application's body builds on the (rescaled) input image.

    Attributes:
        features: the output with ``include_top=False`` and the input of the top: a capsule tensor
            ``(poses, activations)`` (grid poses ``(batch, H, W, types, dim)`` become a
            ``(batch, H, W, types*dim)`` map, fully connected ones ``(batch, caps*dim)``), or a
            ``(batch, H, W, C)`` feature map; ``pooling`` pools the maps to ``(batch, C)``.
        class_layer: the class-capsule layer, called on ``features`` with the top (its name is the
            decoder's ``class_capsules``); ``None`` for a model whose top is ``head``.
        scores: ``(class_poses, class_activations)`` -> raw ``(batch, classes)`` scores
            (:func:`capsule_lengths`, :func:`class_activations` or the model's own head).
        head: without a ``class_layer``: ``features`` -> raw ``(batch, classes)`` scores.
        decoder: optional reconstruction decoder (a body makes one with ``include_top`` only), and
            ``reconstruction_weight``, ``pixel_reduction``, ``mask_top_k``: as in
            :class:`~keras_capsules.applications.CapsuleClassifier`.
    """

    features: Any
    class_layer: Any = None
    scores: Callable[[Any, Any], Any] = capsule_lengths
    head: Callable[[Any], Any] | None = None
    decoder: Any = None
    reconstruction_weight: float = 0.0005
    pixel_reduction: str = "sum"
    mask_top_k: int = 1


#: A setting given as a value or as a function of the constructor's arguments (e.g. of ``variant``).
Setting = Any


@dataclasses.dataclass(frozen=True)
class Application:
    """One application: what :func:`build` needs besides the constructor's arguments.

    ``input_shape``, ``min_size`` and ``router_needs`` are values or functions of the arguments
    (a ``types.SimpleNamespace`` of the constructor's arguments).

    Attributes:
        name: the constructor name, used in error messages.
        body: ``(x, arguments) -> Network``: the network on the input ``x``. ``arguments`` holds the
            validated ``input_shape`` ``(H, W, C)`` and the defaulted ``router``.
        input_shape: the paper's input shape, the default.
        min_size: smallest allowed height and width.
        fixed_size: the top needs exactly ``input_shape`` spatially (a class layer with one weight per child).
        check: the application's own argument checks, run first; may fill in variant defaults
            (e.g. ``arguments.classes``).
        default_router: the router spec that ``router=None`` stands for.
        router_needs: the :func:`keras_capsules.routing.available` capabilities the ``router``
            argument must have; ``None``: the constructor has no ``router``.
        router_hint: appended to a router error (e.g. which option takes the other routers).
    """

    name: str
    body: Callable[[Any, Any], Network]
    input_shape: Setting
    min_size: Setting
    fixed_size: bool = False
    check: Callable[[Any], None] | None = None
    default_router: Any = None
    router_needs: Setting = None
    router_hint: str = ""


def _setting(value: Setting, arguments: Any) -> Any:
    return value(arguments) if callable(value) else value


def build(application: Application, arguments: dict[str, Any]) -> Any:
    """Builds the application from the constructor's arguments (its ``locals()``) and loads ``weights``.

    Returns:
        A built :class:`~keras_capsules.applications.CapsuleClassifier`.
    """
    args = types.SimpleNamespace(**arguments)
    name = application.name
    if application.check is not None:
        application.check(args)
    default_shape, min_size = _setting(application.input_shape, args), _setting(application.min_size, args)
    args.input_shape = validate_application_args(name, args, default_shape, min_size, application.fixed_size)
    check_pooling(name, args.include_top, args.pooling)
    needs = _setting(application.router_needs, args)
    if needs is not None:
        args.router = application.default_router if args.router is None else args.router
        check_router(name, args.router, application.router_hint, **needs)
    inputs, x = model_inputs(args.input_tensor, args.input_shape, args.include_preprocessing)
    model = assemble(name, inputs, application.body(x, args), args)
    model.constructor = constructor_record(name, arguments, args)
    return load_weights(model, args.weights)


#: Constructor arguments a record leaves out: the weights loaded, and the tensor built on.
UNRECORDED = ("weights", "input_tensor")


def _json_value(value):
    """``value`` with tuples as lists, NumPy scalars as Python numbers, and Keras objects (a ``Router``, an activation) as their serialisation."""
    if isinstance(value, (tuple, list)):
        return [_json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _json_value(item) for key, item in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return keras.saving.serialize_keras_object(value)


def constructor_record(model_name: str, arguments: dict[str, Any], args: Any) -> dict | None:
    """``{"name": model_name, "arguments": {...}}``: the call that rebuilds the architecture (``CapsuleClassifier.constructor``).

    The arguments are the constructor's parameters (the keys of ``arguments``, its ``locals()``) with
    their values after validation (``args``): the variant's ``classes``, the ``input_shape`` and the
    default ``router`` filled in, as JSON values. ``weights`` and ``input_tensor`` are left out.

    Returns:
        The record, or ``None`` when the model was built on an ``input_tensor`` (its graph may hold
        layers that no argument names) or an argument has no JSON form.
    """
    if args.input_tensor is not None:
        return None
    record = {
        "name": model_name,
        "arguments": {key: _json_value(getattr(args, key)) for key in arguments if key not in UNRECORDED},
    }
    try:
        json.dumps(record)
    except (TypeError, ValueError):
        return None
    return record


def assemble(model_name: str, inputs: Any, network: Network, args: Any) -> Any:
    """The :class:`~keras_capsules.applications.CapsuleClassifier` of ``network``: features, or the top and ``"predictions"``."""
    if not args.include_top:
        features = network.features
        if isinstance(features, (tuple, list)):
            return CapsuleClassifier(
                inputs, feature_output(model_name, features[0], args.pooling, args.name), name=args.name
            )
        return CapsuleClassifier(inputs, pooled_features(features, args.pooling), name=args.name)
    if network.class_layer is None:
        if network.head is None:
            raise ValueError(
                f"{model_name}: its body's Network expected a `class_layer` or a `head`, received neither."
            )
        return CapsuleClassifier(
            inputs, predictions(network.head(network.features), args.classifier_activation), name=args.name
        )
    scores = network.scores(*network.class_layer(network.features))
    return CapsuleClassifier(
        inputs,
        predictions(scores, args.classifier_activation),
        decoder=network.decoder,
        class_capsules=network.class_layer.name,
        reconstruction_weight=network.reconstruction_weight,
        pixel_reduction=network.pixel_reduction,
        mask_top_k=network.mask_top_k,
        name=args.name,
    )


def validate_application_args(model_name, args, default_shape, min_size, fixed_size=False):
    """Validates the Keras Applications arguments among the constructor's ``args`` and returns the input shape ``(H, W, C)``.

    Args:
        model_name: the constructor name used in error messages.
        args: the constructor's arguments (``include_top``, ``weights``, ``input_tensor``,
            ``input_shape``, ``pooling``, ``classes``, ``classifier_activation`` are read).
        default_shape: the paper's input shape.
        min_size: smallest allowed height and width.
        fixed_size: when the top needs exactly ``default_shape`` spatially (capsule models whose
            class layer has one weight per child cannot take another size).

    Raises:
        ValueError: for a weights value that is neither ``None`` nor an existing file, a bad
            pooling, non-positive classes, or an input shape that is not 3-D, too small, or
            (with ``include_top``) not fully defined.
    """
    weights, classes, pooling, activation = args.weights, args.classes, args.pooling, args.classifier_activation
    include_top, input_shape = args.include_top, args.input_shape
    if not (weights is None or (isinstance(weights, (str, os.PathLike)) and os.path.isfile(weights))):
        raise ValueError(
            f"{model_name}: argument `weights` expected None (random initialisation), the path to an existing "
            f"weights file, or a preset name (keras_capsules.presets.available()), received {weights!r}."
        )
    if not errors.is_integer(classes) or classes < 1:
        raise ValueError(f"{model_name}: argument `classes` expected a positive integer, received {classes!r}.")
    if pooling not in POOLINGS:
        raise ValueError(f"{model_name}: argument `pooling` expected one of None, 'avg', 'max', received {pooling!r}.")
    if activation is not None:
        try:
            keras.activations.get(activation)
        except (ValueError, TypeError):
            raise ValueError(
                f"{model_name}: argument `classifier_activation` expected None or a Keras activation, received {activation!r}."
            ) from None
    if input_shape is None and args.input_tensor is not None:
        input_shape = tuple(args.input_tensor.shape[1:])
    if input_shape is None:
        input_shape = default_shape
    input_shape = tuple(input_shape)
    if len(input_shape) != 3 or not all(size is None or errors.is_integer(size) for size in input_shape):
        raise ValueError(
            f"{model_name}: argument `input_shape` expected a 3-tuple (height, width, channels) of integers, received {input_shape!r}."
        )
    input_shape = tuple(None if size is None else int(size) for size in input_shape)  # np.int64 -> int: JSON configs
    height, width, channels = input_shape
    if None in (height, width):
        raise ValueError(
            f"{model_name}: argument `input_shape` expected a fully defined shape (known height and width: the capsule layers "
            f"turn the feature grid into a fixed number of capsules, so variable image sizes are not supported, with or "
            f"without the top), received {input_shape!r}."
        )
    if include_top and channels is None:
        raise ValueError(
            f"{model_name}: argument `input_shape` expected a fully defined shape when include_top=True, received {input_shape!r}."
        )
    if channels is not None and channels < 1:
        raise ValueError(
            f"{model_name}: argument `input_shape` expected a positive number of channels, received {input_shape!r}."
        )
    for size in (height, width):
        if size is not None and size < min_size:
            raise ValueError(
                f"{model_name}: argument `input_shape` expected height and width >= {min_size}, received {input_shape!r}."
            )
    if fixed_size and include_top and (height, width) != tuple(default_shape[:2]):
        raise ValueError(
            f"{model_name}: argument `input_shape` expected height and width {tuple(default_shape[:2])} with include_top=True "
            f"(the class-capsule layer has one transform per child), received {input_shape!r}."
        )
    if channels not in (1, 2, 3) and channels is not None:
        # stacklevel 5: this function, build, the constructor, its with_presets wrapper, the caller.
        warnings.warn(
            f"{model_name}: input_shape has {channels} channels; the paper configurations use 1, 2 or 3.", stacklevel=5
        )
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
    try:
        name = routing.router_name(router)
    except (ValueError, TypeError) as error:
        raise type(error)(f"{model_name}: argument `router`: {error}") from None
    fitting = routing.available(**capabilities)
    if name not in fitting:
        needs = ", ".join(f"{key}={value!r}" for key, value in capabilities.items())
        reason = (
            "that is not a registered router"
            if name not in routing.available()
            else f"router {name!r} lacks one of them"
        )
        raise ValueError(
            f"{model_name}: argument `router` expected a registered router with the capabilities this model needs "
            f"(routing.available({needs}): {fitting}), received {router!r}: {reason}{hint}."
        )
    return name


def layer_router(model_name, args, child_grid=None, kernel_size=1, strides=1):
    """A fresh router for one capsule layer from the constructor's ``args.router`` and ``args.routing_iterations``.

    Given a convolutional capsule layer's input grid ``child_grid`` (with its ``kernel_size`` and ``strides``,
    VALID padding) and ``args.spatial_routing`` true, a router that takes a layer's geometry
    (``routing.available(child_grid=True)``) gets it, so it normalises each child over every parent position
    and type it feeds; other routers, and ``child_grid=None``, route each receptive field on its own.

    Args:
        model_name: the constructor name that errors name.
        args: the constructor's arguments (``router``, ``routing_iterations``; ``spatial_routing`` where
            ``child_grid`` is given).
        child_grid: ``None`` or the layer's input grid ``(H, W)``.
        kernel_size, strides: the layer's.
    """
    geometry = None
    if (
        child_grid is not None
        and args.spatial_routing
        and routing.router_name(args.router) in routing.available(child_grid=True)
    ):
        geometry = dict(child_grid=child_grid, kernel_size=kernel_size, strides=strides, padding="valid")
    return routing.resolve(args.router, args.routing_iterations, owner=model_name, overrides=geometry)


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
    return keras.layers.Activation(
        "linear" if classifier_activation is None else classifier_activation, name="predictions"
    )(scores)


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
        presets.load_weights(model, path)
        return model
    load_weights_file(model, path)  # ModelFileError naming the file when it is missing, corrupt or for another model
    return model
