"""``with_presets``: lets an application constructor take ``weights="<preset name>"``.

A preset fixes the constructor arguments it was trained with. The wrapped constructor fills them in,
refuses explicit arguments that contradict them (``classes``/``input_shape`` only when
``include_top=True``; a removable part such as the decoder may be switched off), builds the model
with random weights, then loads the preset file by layer name, so ``include_top=False`` and
``reconstruction=False`` load the layers they keep. The decorator also registers the constructor under
its model name, so :func:`build_preset` builds any preset's model without importing the applications.
"""

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from keras_capsules.presets import registry
from keras_capsules.presets.weights_file import load_weights

#: A constructor: :func:`with_presets` returns it with the same signature.
F = TypeVar("F", bound=Callable[..., Any])
#: Keras Applications arguments that never change the weights a preset needs.
FREE_ARGUMENTS = ("include_top", "weights", "input_tensor", "pooling", "classifier_activation", "include_preprocessing", "name")
#: Arguments that must match the preset only when the top (class layer) is kept.
TOP_ARGUMENTS = ("classes", "input_shape")
#: The constructors :func:`with_presets` wrapped, by model name (``"EffCapsNet"``): what :func:`build_preset` calls.
_CONSTRUCTORS: dict[str, Callable[..., Any]] = {}


def _same(a, b):
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return a is not None and b is not None and tuple(a) == tuple(b)
    try:
        return bool(np.all(a == b))
    except Exception:  # noqa: BLE001 - values that cannot be compared differ
        return False


def preset_arguments(model_name, preset, signature, explicit):
    """The constructor arguments for ``preset`` given the caller's ``explicit`` arguments.

    Raises:
        ValueError: an explicit argument contradicts the preset.
    """
    include_top = explicit.get("include_top", signature.parameters["include_top"].default)
    arguments = dict(explicit)
    for key, value in preset.kwargs.items():
        if key not in explicit:
            if key in TOP_ARGUMENTS and not include_top and key == "classes":
                continue
            arguments[key] = tuple(value) if isinstance(value, list) else value
            continue
        given = explicit[key]
        if _same(given, value) or (key in TOP_ARGUMENTS and not include_top) or (key in preset.removable and not given):
            continue
        raise ValueError(
            f"{model_name}: argument `{key}` expected {value!r} (fixed by preset weights={preset.name!r}"
            + (", or include_top=False" if key in TOP_ARGUMENTS else "")
            + f"), received {given!r}."
        )
    for key, given in explicit.items():
        if key in preset.kwargs or key in FREE_ARGUMENTS or key in TOP_ARGUMENTS:
            continue
        default = signature.parameters[key].default
        if not _same(given, default):
            raise ValueError(
                f"{model_name}: argument `{key}` expected its default {default!r} with preset weights={preset.name!r} "
                f"(the preset fixes the architecture it was trained with), received {given!r}."
            )
    arguments["weights"] = None
    return arguments


def with_presets(model_name: str) -> Callable[[F], F]:
    """Decorator: ``constructor(weights=<preset name>, ...)`` builds the preset's model and loads its file.

    ``weights=None`` or a file path passes through to the constructor unchanged.
    """

    def decorate(constructor):
        signature = inspect.signature(constructor)

        @functools.wraps(constructor)
        def build(*args, **kwargs):
            try:
                explicit = signature.bind(*args, **kwargs).arguments
            except TypeError as error:  # bind's message lacks the function's name
                raise TypeError(f"{model_name}() {error}; its arguments: {', '.join(signature.parameters)}.") from None
            weights = explicit.get("weights")
            is_path_like = isinstance(weights, (str, os.PathLike))
            if not is_path_like or os.path.isfile(weights):
                return constructor(*args, **kwargs)  # None, an existing file, or a type the constructor reports
            if not registry.is_preset(model_name, weights):
                text = os.fspath(weights)
                if os.sep in text or text.endswith((".h5", ".keras", ".npz")):
                    raise FileNotFoundError(f"{model_name}: argument `weights`: no such weights file {text!r}.")
                registry.get(model_name, text)  # raises, listing the model's presets
            preset = registry.get(model_name, weights)
            path = registry.locate(preset)
            model = constructor(**preset_arguments(model_name, preset, signature, explicit))
            load_weights(model, path)
            return model

        build.presets = lambda: [key.split("/", 1)[1] for key in registry.available(model_name)]
        _CONSTRUCTORS[model_name] = build
        return build

    return decorate


def build_preset(model_name: str, name: str) -> Any:
    """The model of the preset ``model_name/name``: the constructor :func:`with_presets` wrapped, with ``weights=name``.

    ``import keras_capsules`` imports the applications as soon as Keras is imported, so their
    constructors are registered here before any preset is built.

    Raises:
        ValueError: no constructor named ``model_name`` was decorated with :func:`with_presets`.
    """
    if model_name not in _CONSTRUCTORS:
        raise ValueError(
            f"build_preset: argument `model_name` expected a constructor decorated with with_presets "
            f"(one of {sorted(_CONSTRUCTORS)}), received {model_name!r}."
        )
    return _CONSTRUCTORS[model_name](weights=name)
