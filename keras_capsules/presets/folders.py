"""Preset folders: a trained model shared as a folder that ``presets.load(folder)`` and ``MODEL(weights=folder)`` read.

The layout follows keras-hub's preset folders::

    FOLDER/
      config.json        what builds the model: {"format": "keras_capsules.preset", "format_version": 1,
                         "constructor": "EffCapsNet", "arguments": {...}}; for a model that records no
                         application constructor, "keras_config": Keras's serialisation of the model
      model.weights.npz  every weight in the library's preset file format (float32), the format of
                         the library's own presets, loaded by the same code
      metadata.json      library and Keras versions, date, the weights file and its SHA-256, class
                         names, preprocessing, parameter count, and the metrics of the run that made it
      README.md          the model card

Reading a folder checks its files before anything is built: both JSON files present and valid, the
weights file present with the SHA-256 that ``metadata.json`` records.
"""

import dataclasses
import datetime
import json
import os
from typing import Any

import keras

from keras_capsules import errors
from keras_capsules.presets.cards import folder_card
from keras_capsules.presets.class_names import check_class_names, class_names_of, output_units
from keras_capsules.presets.weights_file import PresetFileError, load_weights, save_weights, sha256
from keras_capsules.saving import atomic, check_output_folder
from keras_capsules.version import __version__

FORMAT = "keras_capsules.preset"
FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
METADATA_FILE = "metadata.json"
WEIGHTS_FILE = "model.weights.npz"
CARD_FILE = "README.md"
FILES = (CONFIG_FILE, METADATA_FILE, WEIGHTS_FILE, CARD_FILE)


@dataclasses.dataclass(frozen=True)
class PresetFolder:
    """A preset folder as read by :func:`read`: its path and the content of its two JSON files."""

    path: str
    config: dict
    metadata: dict

    @property
    def model(self) -> str | None:
        """The application constructor that builds the model (``"EffCapsNet"``), or ``None`` (a Keras config)."""
        return self.config.get("constructor")

    @property
    def arguments(self) -> dict:
        """The constructor's arguments, as recorded (``{}`` for a Keras config)."""
        return dict(self.config.get("arguments") or {})

    @property
    def keras_config(self) -> dict | None:
        """Keras's serialisation of a model without a recorded constructor, else ``None``."""
        return self.config.get("keras_config")

    @property
    def class_names(self) -> tuple[str, ...] | None:
        """The class names, in output order, or ``None``."""
        names = self.metadata.get("class_names")
        return None if names is None else tuple(names)

    @property
    def weights_path(self) -> str:
        """Path of the weights file."""
        return os.path.join(self.path, self.metadata["weights"]["file"])


def is_preset_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder whose ``config.json`` declares a preset folder (nothing else is checked)."""
    config = os.path.join(os.fspath(path), CONFIG_FILE)
    if not os.path.isfile(config):
        return False
    try:
        with open(config) as handle:
            return json.load(handle).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def _read_json(folder, name, function):
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        raise PresetFileError(
            f"{function}: preset folder {folder!r} has no {name} (a preset folder holds {', '.join(FILES)}; presets.save writes one)."
        )
    try:
        with open(path) as handle:
            value = json.load(handle)
    except (OSError, ValueError) as error:
        raise PresetFileError(
            f"{function}: {path!r} is truncated or corrupt (not valid JSON: {error}); save the preset folder again."
        ) from None
    if not isinstance(value, dict):
        raise PresetFileError(
            f"{function}: {path!r} expected a JSON object, received a {type(value).__name__}; save the preset folder again."
        )
    return value


def read(folder: str | os.PathLike, function: str = "presets.load") -> PresetFolder:
    """The preset folder ``folder``, checked: JSON files present and valid, weights file present with its recorded SHA-256.

    Args:
        folder: the folder.
        function: what errors name as the caller.

    Raises:
        PresetFileError: ``folder`` is not a folder or not a preset folder, or a file is missing,
            corrupt, or has another SHA-256 than recorded; the message names the file.
    """
    path = os.fspath(folder)
    if not os.path.isdir(path):
        raise PresetFileError(
            f"{function}: {path!r} is not a folder (expected a preset folder written by presets.save)."
        )
    config = _read_json(path, CONFIG_FILE, function)
    if config.get("format") != FORMAT:
        raise PresetFileError(
            f"{function}: {path!r} is not a preset folder: its {CONFIG_FILE} declares format {config.get('format')!r}, expected {FORMAT!r}."
        )
    if config.get("format_version", 0) > FORMAT_VERSION:
        raise PresetFileError(
            f"{function}: preset folder {path!r} has format version {config['format_version']}; this keras-capsules reads up to "
            f"{FORMAT_VERSION}: upgrade keras-capsules."
        )
    if not (
        isinstance(config.get("constructor"), str) and isinstance(config.get("arguments"), dict)
    ) and not isinstance(config.get("keras_config"), dict):
        raise PresetFileError(
            f"{function}: {os.path.join(path, CONFIG_FILE)!r} names neither a constructor with its arguments nor a Keras config."
        )
    metadata = _read_json(path, METADATA_FILE, function)
    weights = metadata.get("weights")
    if not (
        isinstance(weights, dict) and isinstance(weights.get("file"), str) and isinstance(weights.get("sha256"), str)
    ):
        raise PresetFileError(
            f"{function}: {os.path.join(path, METADATA_FILE)!r} records no weights file with its SHA-256."
        )
    record = PresetFolder(path, config, metadata)
    if os.path.dirname(os.path.normpath(weights["file"])) or not os.path.isfile(record.weights_path):
        raise PresetFileError(
            f"{function}: preset folder {path!r} has no weights file {weights['file']!r} (recorded in {METADATA_FILE})."
        )
    actual = sha256(record.weights_path)
    if actual != weights["sha256"]:
        raise PresetFileError(
            f"{function}: {record.weights_path!r} has SHA-256 {actual}, expected {weights['sha256']} (recorded in {METADATA_FILE}); "
            "the file is corrupt or was replaced: copy the preset folder again."
        )
    return record


def _constructor_config(model):
    """``config.json``'s model part: the recorded constructor and arguments, else Keras's serialisation of ``model``."""
    record = getattr(model, "constructor", None)
    if isinstance(record, dict):
        return {"constructor": record["name"], "arguments": record["arguments"]}
    config = keras.saving.serialize_keras_object(model)
    try:
        json.dumps(config)
    except (TypeError, ValueError) as error:
        errors.fail(
            "presets.save",
            "model",
            "a model built by an application constructor, or one whose Keras config is JSON",
            f"{model.name!r} ({error})",
        )
    return {"keras_config": config}


def _preprocessing(model, model_config, preprocessing):
    """What the model takes: ``input_shape``, ``channels``, ``data_format``, ``input_range``, updated by ``preprocessing``."""
    shapes = [list(tensor.shape[1:]) for tensor in model.inputs]
    scaled_in_model = bool(model_config.get("arguments", {}).get("include_preprocessing", False))
    recorded = {
        "input_shape": shapes[0] if len(shapes) == 1 else shapes,
        "channels": shapes[0][-1] if len(shapes) == 1 else None,
        "data_format": "channels_last",
        "input_range": [0, 255] if scaled_in_model else [0, 1],
    }
    if preprocessing is not None:
        if not isinstance(preprocessing, dict):
            errors.fail(
                "presets.save",
                "preprocessing",
                "None or a dict of entries to record (e.g. {'input_range': [0, 255]})",
                preprocessing,
                TypeError,
            )
        try:
            recorded.update(json.loads(json.dumps(preprocessing)))
        except (TypeError, ValueError) as error:
            errors.fail("presets.save", "preprocessing", f"a dict of JSON values ({error})", preprocessing, TypeError)
    return recorded


def _metrics(metrics):
    """The run's metrics as a JSON-ready dict: ``metrics`` itself, or the ``metrics.json`` it names."""
    if metrics is None:
        return None
    if isinstance(metrics, (str, os.PathLike)):
        if not os.path.isfile(metrics):
            errors.fail(
                "presets.save",
                "metrics",
                "None, a dict or the path of a run's metrics.json",
                f"{os.fspath(metrics)} (no such file)",
            )
        try:
            with open(metrics) as handle:
                metrics = json.load(handle)
        except (OSError, ValueError) as error:
            errors.fail("presets.save", "metrics", "a readable metrics.json (JSON)", f"{os.fspath(metrics)} ({error})")
    if not isinstance(metrics, dict):
        errors.fail("presets.save", "metrics", "None, a dict or the path of a run's metrics.json", metrics, TypeError)
    try:
        return json.loads(json.dumps(metrics))
    except (TypeError, ValueError) as error:
        errors.fail("presets.save", "metrics", f"a dict of JSON values ({error})", type(metrics).__name__, TypeError)


def _check_target(path, overwrite):
    """Refuses to write where that would destroy something: see :func:`save`."""
    check_output_folder(path, overwrite=overwrite, what="presets.save: folder")
    if os.path.isdir(path) and os.listdir(path) and not is_preset_folder(path):
        raise ValueError(
            f"presets.save: folder {path!r} is not empty and is not a preset folder; overwrite=True replaces a preset "
            "folder only: choose another name."
        )


def save(
    model: keras.Model,
    folder: str | os.PathLike,
    card: str | None = None,
    metrics: dict | str | os.PathLike | None = None,
    preprocessing: dict | None = None,
    class_names: tuple[str, ...] | None = None,
    overwrite: bool = False,
) -> str:
    """Writes ``model`` as a preset folder (layout in the module docstring); returns the folder's path.

    The folder is written under a temporary name beside it and renamed into place, so it is never
    seen half-written; nothing is written anywhere else.

    Examples:
        >>> metrics = training.train("EffCapsNet", "fashion_mnist", output="runs/fm")
        >>> model = saving.load_model("runs/fm/model.keras")
        >>> presets.save(model, "my-preset", metrics="runs/fm/metrics.json", card="Shoes and shirts.")
        >>> presets.load("my-preset")  # or applications.EffCapsNet(weights="my-preset")

    Args:
        model: a built model. One built by an application constructor (its ``constructor`` record,
            also kept in its ``.keras`` file) is rebuilt through that constructor; any other through
            its Keras config.
        folder: the folder to write (its parents are created).
        card: Markdown added to the model card, after its heading (what the model is for, where its
            images come from, ...).
        metrics: the run that made the model: the dict ``keras_capsules.training.train`` returns, or
            the path of its ``metrics.json``. Stored in ``metadata.json``; the card reports its
            dataset, recipe, epochs, time, validation and test accuracies and, from a folder summary
            (``datasets.folder_summary``) at its top level, the classes' image counts.
        preprocessing: entries replacing or added to the recorded ones (``input_shape``, ``channels``,
            ``data_format``, ``input_range``: ``[0, 1]``, or ``[0, 255]`` for a model built with
            ``include_preprocessing=True``).
        class_names: the class names in output order (default: the model's own,
            :func:`~keras_capsules.presets.class_names_of`); one per output unit.
        overwrite: replace an existing preset folder (never another non-empty folder).

    Raises:
        ValueError: the folder exists and is not empty (without ``overwrite``, or when it is not a
            preset folder), is a file, or holds the current folder; the class names do not fit the model.
        TypeError: ``model`` is not a built Keras model; an argument of the wrong type.
    """
    if not isinstance(model, keras.Model) or not model.built:
        errors.fail(
            "presets.save",
            "model",
            "a built keras.Model",
            model if not isinstance(model, keras.Model) else f"unbuilt model {model.name!r}",
            TypeError,
        )
    if isinstance(folder, bool) or not isinstance(folder, (str, os.PathLike)):
        errors.fail("presets.save", "folder", "a folder path (str or os.PathLike)", folder, TypeError)
    folder = os.fspath(folder)
    if card is not None and not isinstance(card, str):
        errors.fail("presets.save", "card", "None or Markdown text", card, TypeError)
    names = check_class_names(
        "presets.save", class_names if class_names is not None else class_names_of(model), output_units(model)
    )
    _check_target(folder, overwrite)
    model_config = _constructor_config(model)
    config = {"format": FORMAT, "format_version": FORMAT_VERSION, **model_config}
    metadata = {
        "keras_capsules_version": __version__,
        "keras_version": keras.__version__,
        "backend": keras.backend.backend(),
        "date_saved": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "model_name": model.name,
        "parameters": int(model.count_params()),
        "weights": {"file": WEIGHTS_FILE, "sha256": None, "storage_dtype": "float32"},
        "class_names": None if names is None else list(names),
        "preprocessing": _preprocessing(model, model_config, preprocessing),
        "metrics": _metrics(metrics),
    }
    with atomic.atomic_directory(folder) as temporary:
        metadata["weights"]["sha256"] = save_weights(model, os.path.join(temporary, WEIGHTS_FILE))
        for name, value in ((CONFIG_FILE, config), (METADATA_FILE, metadata)):
            with open(os.path.join(temporary, name), "w") as handle:
                json.dump(value, handle, indent=2)
                handle.write("\n")
        with open(os.path.join(temporary, CARD_FILE), "w") as handle:
            handle.write(folder_card(config, metadata, card, title=os.path.basename(os.path.abspath(folder))))
    return folder


def load_into(model: Any, record: PresetFolder, top: bool = True) -> Any:
    """Loads ``record``'s weights into ``model`` by layer name and, with the ``top`` (the class layer), its class names; returns ``model``.

    Raises:
        PresetFileError: a weighted layer of ``model`` is missing from the file or has other shapes.
    """
    load_weights(model, record.weights_path)
    if top and record.class_names is not None:
        model.class_names = record.class_names
    return model
