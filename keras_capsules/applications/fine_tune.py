"""A preset's backbone under new class capsules: the model that fine-tunes a pretrained network on other classes.

``fine_tune_model("EffCapsNet", "mnist", input_shape=(64, 64, 3), classes=5)`` builds the application
for the new input and classes with the preset's architecture arguments, then copies the preset's
weights into every layer of the backbone (the layers the ``include_top=False`` model keeps). The top —
the class capsules, and the decoder of a model with reconstruction — starts from its random
initialisation, because its shape depends on the classes and on the number of capsules the new input
size gives.

What the architecture allows, and what it refuses:

- Another image size: allowed where no backbone weight depends on it (convolutions, batch norm and
  convolutional capsules do not; a fully connected capsule layer inside the backbone would). Where
  one does, the error names the layer and both shapes, and says which size the preset was trained on.
- Other channels: the first convolution's kernel ``(kh, kw, c_in, filters)`` is the only weight that
  sees them. A grayscale preset on RGB input gets the gray kernel divided by 3 on each of the three
  channels, so an RGB image whose channels are equal gives exactly the gray network's response (the
  kernel sees the mean of the channels); an RGB preset on grayscale input gets the kernel summed over
  its channels (a gray image seen as R = G = B). Other channel counts are refused.
"""

import numpy as np

from keras_capsules import presets
from keras_capsules.presets.weights_file import read_weights, weighted_layers

#: What :func:`fine_tune_model` did to a backbone layer's weights, by layer name, in ``FineTuned.adapted``.
GRAY_TO_RGB = "first convolution: the grayscale kernel divided by 3 on each RGB channel (the mean of the channels)"
RGB_TO_GRAY = "first convolution: the RGB kernel summed over its channels (a gray image as R = G = B)"


class FineTuned:
    """The result of :func:`fine_tune_model`.

    Attributes:
        model: the application, backbone weights from the preset, top freshly initialised.
        preset: the preset key, ``"MODEL/NAME"``, or the preset folder's path.
        backbone: names of the layers whose weights came from the preset, in model order.
        top: names of the weighted layers that start from their initialisation (class capsules, decoder).
        adapted: ``{layer name: what was done}`` for weights converted rather than copied (see the module docstring).
    """

    def __init__(self, model, preset, backbone, top, adapted):
        self.model, self.preset, self.backbone, self.top, self.adapted = (
            model,
            preset,
            tuple(backbone),
            tuple(top),
            dict(adapted),
        )

    def record(self):
        """What ``metrics.json`` records about the fine-tuning."""
        return {
            "preset": self.preset,
            "backbone_layers": list(self.backbone),
            "new_layers": list(self.top),
            "adapted": self.adapted,
        }


def _adapt_first_kernel(stored, wanted):
    """``stored`` kernel ``(kh, kw, c, f)`` converted to ``wanted``'s input channels, and how; ``None`` when it cannot be."""
    if stored.ndim != 4 or stored.shape[:2] != wanted[:2] or stored.shape[3] != wanted[3]:
        return None
    if stored.shape[2] == 1 and wanted[2] == 3:
        return np.repeat(stored / 3.0, 3, axis=2), GRAY_TO_RGB
    if stored.shape[2] == 3 and wanted[2] == 1:
        return stored.sum(axis=2, keepdims=True), RGB_TO_GRAY
    return None


def _resolve(model_name, weights, kwargs):
    """``(key, recorded, weights_path, constructor, arguments)``: the preset ``weights`` of ``model_name`` (a registered
    preset, or a preset folder written by ``presets.save``), the constructor arguments it records (``input_shape`` and
    ``classes`` included), its weights file, and its architecture arguments under ``kwargs``."""
    import os

    from keras_capsules import applications
    from keras_capsules.presets import folders
    from keras_capsules.presets.constructor import FREE_ARGUMENTS

    constructor = getattr(applications, model_name)
    if isinstance(weights, (str, os.PathLike)) and folders.is_preset_folder(weights):
        folder = folders.read(weights, function=f"fine_tune_model({model_name!r}, weights={os.fspath(weights)!r})")
        if folder.model != model_name:
            raise ValueError(
                f"fine_tune_model({model_name!r}, weights={os.fspath(weights)!r}): argument `weights` expected a preset "
                f"folder made by {model_name}, received one made by {folder.model or 'a Keras config'}."
            )
        shown = {"input_shape": folder.metadata.get("preprocessing", {}).get("input_shape")}
        if folder.class_names:
            shown["classes"] = len(folder.class_names)
        architecture = {
            k: v for k, v in folder.arguments.items() if k not in FREE_ARGUMENTS
        }  # not include_top, name...
        key, recorded, path = os.fspath(weights), {**shown, **architecture}, folder.weights_path
    else:
        key = presets.find(weights if "/" in str(weights) or ":" in str(weights) else f"{model_name}/{weights}")
        if key is None or key[0] != model_name:
            names = ", ".join(f"{model_name}/{name}" for name in constructor.presets())
            raise ValueError(
                f"fine_tune_model({model_name!r}, weights={weights!r}): argument `weights` expected a preset of {model_name} "
                f"({names or 'it has none'}) or a preset folder it made, received {weights!r}."
            )
        preset = presets.get(*key)
        key, recorded, path = "/".join(key), preset.kwargs, presets.locate(preset)
    arguments = {
        k: (tuple(v) if isinstance(v, list) else v) for k, v in recorded.items() if k not in ("input_shape", "classes")
    }
    return key, recorded, path, constructor, {**arguments, **kwargs}


def _backbone_names(constructor, input_shape, arguments):
    """The weighted layers of the ``include_top=False`` model, in model order."""
    return list(weighted_layers(constructor(include_top=False, input_shape=tuple(input_shape), **arguments)))


def new_layer_names(model_name, weights, **kwargs):
    """The weighted layers :func:`fine_tune_model` initialises afresh (the top), without loading anything.

    Layer names do not depend on the input size or the classes, so the model is built at the preset's.
    """
    _, recorded, _, constructor, arguments = _resolve(model_name, weights, kwargs)
    shape, classes = tuple(recorded["input_shape"]), recorded["classes"]
    backbone = _backbone_names(constructor, shape, arguments)
    return [
        name
        for name in weighted_layers(constructor(input_shape=shape, classes=classes, **arguments))
        if name not in backbone
    ]


def fine_tune_model(model_name, weights, input_shape, classes, **kwargs):
    """The application ``model_name`` for ``input_shape`` and ``classes``, its backbone loaded from preset ``weights``.

    Args:
        model_name: application constructor name, e.g. ``"EffCapsNet"``.
        weights: a preset of that application: ``"mnist"``, ``"EffCapsNet/mnist"``, or the path of a preset
            folder it made (``presets.save``, ``keras-capsules train --save-preset``).
        input_shape: the new images' ``(height, width, channels)``.
        classes: the new number of classes (the new class capsules).
        **kwargs: constructor arguments over the preset's (for example ``reconstruction=False``);
            architecture arguments that change a backbone weight's shape are refused below.

    Returns:
        A :class:`FineTuned`.

    Raises:
        ValueError: ``weights`` is not a preset of ``model_name``; or a backbone weight's shape
            differs in a way the architecture cannot take (the message names the layer, both shapes
            and the preset's input shape).
    """
    key, recorded, weights_path, constructor, arguments = _resolve(model_name, weights, kwargs)
    where = f"fine_tune_model({model_name!r}, weights={weights!r})"
    model = constructor(input_shape=tuple(input_shape), classes=int(classes), **arguments)
    backbone_names = _backbone_names(constructor, input_shape, arguments)
    stored = {}
    for name, value in read_weights(weights_path).items():
        layer, _, index = name.rpartition("/")
        stored.setdefault(layer, {})[int(index)] = value
    layers = weighted_layers(model)
    preset_shape = tuple(recorded.get("input_shape", ()))
    adapted = {}
    for position, name in enumerate(backbone_names):
        layer = layers[name]
        if name not in stored or len(stored[name]) != len(layer.weights):
            raise ValueError(f"{where}: the preset has no weights for backbone layer {name!r} built with {arguments}.")
        values = []
        for index, variable in enumerate(layer.weights):
            value, wanted = stored[name][index], tuple(variable.shape)
            if tuple(value.shape) != wanted:
                converted = _adapt_first_kernel(value, wanted) if position == 0 and index == 0 else None
                if converted is None:
                    raise ValueError(
                        f"{where}: weight {index} of backbone layer {name!r} has shape {tuple(value.shape)} in the preset "
                        f"(trained on {preset_shape}) and {wanted} for input_shape={tuple(input_shape)}; the architecture cannot "
                        f"take this input with these weights. Resize the images to the preset's size "
                        f"({preset_shape[:2]}) or train from scratch (weights=None)."
                    )
                value, adapted[name] = converted
            values.append(value)
        for variable, value in zip(layer.weights, values):
            variable.assign(value.astype(variable.dtype))
    top = [name for name in layers if name not in backbone_names]
    return FineTuned(model, key, backbone_names, top, adapted)
