"""``with_presets``: lets an application constructor take ``weights="<preset name>"`` or ``weights=<preset folder>``.

A preset fixes the constructor arguments it was trained with. The wrapped constructor fills them in,
refuses explicit arguments that contradict them (``classes``/``input_shape`` only when
``include_top=True``; a removable part such as the decoder may be switched off), builds the model
with random weights, then loads the preset file by layer name, so ``include_top=False`` and
``reconstruction=False`` load the layers they keep. A preset folder (``presets.save``) goes the same
way with the arguments its ``config.json`` records; those that never change the weights
(:data:`FREE_ARGUMENTS`: ``name``, ``classifier_activation``, ...) default to the recorded ones and may
be changed. The decorator also registers the constructor under its model name, so :func:`build_preset`
builds any preset's model without importing the applications.
"""

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from keras_capsules.presets import folders, registry
from keras_capsules.presets.class_names import output_units
from keras_capsules.presets.weights_file import PresetFileError, load_weights

#: A constructor: :func:`with_presets` returns it with the same signature.
F = TypeVar("F", bound=Callable[..., Any])
#: Keras Applications arguments that never change the weights a preset needs.
FREE_ARGUMENTS = (
    "include_top",
    "weights",
    "input_tensor",
    "pooling",
    "classifier_activation",
    "include_preprocessing",
    "name",
)
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


def preset_arguments(model_name, source, fixed, removable, signature, explicit):
    """The constructor arguments for preset weights given the caller's ``explicit`` arguments.

    Args:
        model_name: the constructor name errors name.
        source: the ``weights=`` value errors name (a preset name or a folder).
        fixed: the constructor arguments the weights were trained with.
        removable: those of ``fixed`` that may be switched off (the decoder: ``reconstruction``).
        signature: the constructor's signature.
        explicit: the caller's arguments.

    Raises:
        ValueError: an explicit argument contradicts the preset.
    """
    include_top = explicit.get("include_top", signature.parameters["include_top"].default)
    arguments = dict(explicit)
    for key, value in fixed.items():
        if key not in explicit:
            if key in TOP_ARGUMENTS and not include_top and key == "classes":
                continue
            arguments[key] = tuple(value) if isinstance(value, list) else value
            continue
        given = explicit[key]
        if _same(given, value) or (key in TOP_ARGUMENTS and not include_top) or (key in removable and not given):
            continue
        raise ValueError(
            f"{model_name}: argument `{key}` expected {value!r} (fixed by preset weights={source!r}"
            + (", or include_top=False" if key in TOP_ARGUMENTS else "")
            + f"), received {given!r}."
        )
    for key, given in explicit.items():
        if key in fixed or key in FREE_ARGUMENTS or key in TOP_ARGUMENTS:
            continue
        default = signature.parameters[key].default
        if not _same(given, default):
            raise ValueError(
                f"{model_name}: argument `{key}` expected its default {default!r} with preset weights={source!r} "
                f"(the preset fixes the architecture it was trained with), received {given!r}."
            )
    arguments["weights"] = None
    return arguments


def folder_model(model_name, constructor, signature, explicit):
    """The model of the preset folder ``explicit["weights"]``, built by ``constructor`` with the arguments it records.

    Raises:
        PresetFileError: the folder is not a preset folder, or a file is missing or corrupt
            (:func:`keras_capsules.presets.folders.read`), or records arguments ``constructor`` lacks.
        ValueError: the folder holds another application's model, or an explicit argument
            contradicts the recorded ones; the message names both.
    """
    path = os.fspath(explicit["weights"])
    record = folders.read(path, function=model_name)
    if record.model != model_name:
        made_by = (
            f"made by {record.model}" if record.model else "made from its Keras config (no application constructor)"
        )
        load = (
            f"presets.load(folder) or applications.{record.model}(weights=folder)"
            if record.model
            else "presets.load(folder)"
        )
        raise ValueError(
            f"{model_name}: argument `weights` expected a preset folder made by {model_name}, received {path!r}, {made_by}: load it with {load}."
        )
    recorded = record.arguments
    unknown = sorted(set(recorded) - set(signature.parameters))
    if unknown:
        raise PresetFileError(
            f"{model_name}: preset folder {path!r} records arguments {unknown} that {model_name} does not take (saved with keras-capsules "
            f"{record.metadata.get('keras_capsules_version')}): use that version."
        )
    free = {key: value for key, value in recorded.items() if key in FREE_ARGUMENTS}
    fixed = {key: value for key, value in recorded.items() if key not in FREE_ARGUMENTS}
    arguments = preset_arguments(model_name, path, fixed, registry.REMOVABLE, signature, {**free, **explicit})
    model = constructor(**arguments)
    return folders.load_into(
        model, record, top=arguments.get("include_top", signature.parameters["include_top"].default)
    )


def with_presets(model_name: str) -> Callable[[F], F]:
    """Decorator: ``constructor(weights=<preset name or preset folder>, ...)`` builds the preset's model and loads its weights.

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
            if not registry.is_preset(model_name, weights) and os.path.isdir(
                weights
            ):  # a preset name first, then a folder
                return folder_model(model_name, constructor, signature, explicit)
            if not registry.is_preset(model_name, weights):
                text = os.fspath(weights)
                if os.sep in text or text.endswith((".h5", ".keras", ".npz")):
                    raise FileNotFoundError(f"{model_name}: argument `weights`: no such weights file {text!r}.")
                registry.get(model_name, text)  # raises, listing the model's presets
            preset = registry.get(model_name, weights)
            path = registry.locate(preset)
            model = constructor(
                **preset_arguments(model_name, preset.name, preset.kwargs, preset.removable, signature, explicit)
            )
            load_weights(model, path)
            if hasattr(model, "class_names") and output_units(model) == len(preset.class_names):
                model.class_names = preset.class_names  # its dataset's, as a preset folder's model carries its own
            return model

        build.presets = lambda: [key.split("/", 1)[1] for key in registry.available(model_name)]
        _CONSTRUCTORS[model_name] = build
        return build

    return decorate


def build_preset(model_name: str, name: str) -> Any:
    """The model of the preset ``model_name/name``: the constructor :func:`with_presets` wrapped, with ``weights=name``.

    ``name`` may also be the path of a preset folder of a ``model_name`` model.

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
