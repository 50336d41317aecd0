"""The preset weights file: every weight of a model keyed by ``"<layer name>/<index>"`` in one compressed ``.npz``.

Keying by layer name (not by position in a nested model) lets one file load into every model that
shares the layers: the full classifier, the model without its decoder, or the ``include_top=False``
backbone. Layers are the leaves of the model tree: a nested ``keras.Model`` is walked into, any other
layer (a decoder built of sublayers included) owns all of its weights, in ``layer.weights`` order.
"""

import io
import os
import tempfile
import zipfile

import keras
import numpy as np

from keras_capsules.hashing import file_sha256


class PresetFileError(ValueError):
    """A preset weights file is missing, corrupt, or does not fit the model."""


def weighted_layers(model):
    """``{layer name: layer}`` for every leaf layer with weights, walking into nested models.

    Raises:
        ValueError: two leaf layers with weights share a name (the file could not tell them apart).
    """
    found = {}
    pending = [model]
    while pending:
        layer = pending.pop()
        if isinstance(layer, keras.Model):
            pending.extend(reversed(layer.layers))
            continue
        if not layer.weights:
            continue
        if layer.name in found and found[layer.name] is not layer:
            raise ValueError(
                f"weighted_layers: two layers named {layer.name!r} in model {model.name!r}; preset files key weights by layer name."
            )
        found[layer.name] = layer
    return found


def save_weights(model: keras.Model, path: str | os.PathLike, dtype: str = "float32") -> str:
    """Writes every weight of ``model`` to the ``.npz`` file ``path`` atomically.

    Args:
        model: a built model.
        path: the file to write (ends in ``.npz``).
        dtype: storage type of floating-point weights: ``"float32"`` or ``"float16"`` (half the size;
            loading casts back to each variable's dtype).

    Returns:
        The SHA-256 of the written file (hex).
    """
    if dtype not in ("float32", "float16"):
        raise ValueError(f"save_weights: argument `dtype` expected 'float32' or 'float16', received {dtype!r}.")
    arrays = {}
    for name, layer in weighted_layers(model).items():
        for index, variable in enumerate(layer.weights):
            value = keras.ops.convert_to_numpy(variable)
            arrays[f"{name}/{index}"] = value.astype(dtype) if np.issubdtype(value.dtype, np.floating) else value
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=folder)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(buffer.getvalue())
        os.chmod(temporary, 0o644)  # mkstemp creates 0600; a shipped file must be readable by everyone
        os.replace(temporary, path)  # readers see the old file or the new one, never half of one
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return sha256(path)


#: Hex SHA-256 of a preset file (what the registry records and `locate` checks).
sha256 = file_sha256


def read_weights(path):
    """``{"<layer>/<index>": array}`` from a preset file, with errors that name the file."""
    if not os.path.isfile(path):
        raise PresetFileError(f"preset file {path!r} does not exist.")
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError) as error:
        raise PresetFileError(f"preset file {path!r} is truncated or corrupt ({error}).") from None


def load_weights(model: keras.Model, path: str | os.PathLike, arrays: dict[str, np.ndarray] | None = None) -> list[str]:
    """Assigns the weights stored in ``path`` to every weighted layer of ``model``.

    Every weighted layer of the model must be in the file with the same number and shapes of
    weights; layers in the file that the model lacks (a decoder or class layer the model was built
    without) are ignored.

    Args:
        model: a built model.
        path: the preset file (named in errors).
        arrays: the file's content when already read (see :func:`read_weights`).

    Returns:
        The names of the layers that were loaded.

    Raises:
        PresetFileError: a layer of the model is missing from the file, or a shape differs.
    """
    arrays = read_weights(path) if arrays is None else arrays
    stored: dict[str, dict[int, np.ndarray]] = {}
    for key, value in arrays.items():
        name, _, index = key.rpartition("/")
        stored.setdefault(name, {})[int(index)] = value
    layers = weighted_layers(model)
    missing = sorted(set(layers) - set(stored))
    if missing:
        raise PresetFileError(
            f"preset file {path!r} has no weights for the layers {missing} of model {model.name!r}; it holds {sorted(stored)}."
        )
    for name, layer in layers.items():
        values = stored[name]
        if len(values) != len(layer.weights):
            raise PresetFileError(
                f"preset file {path!r}: layer {name!r} has {len(layer.weights)} weights in the model, {len(values)} in the file."
            )
        for index, variable in enumerate(layer.weights):
            value = values[index]
            if tuple(value.shape) != tuple(variable.shape):
                raise PresetFileError(
                    f"preset file {path!r}: weight {index} of layer {name!r} has shape {tuple(value.shape)} in the file, "
                    f"{tuple(variable.shape)} in the model."
                )
            variable.assign(value.astype(variable.dtype))
    return sorted(layers)
