"""The preset registry: which trained weights exist, what they measure, how they were made, and where their file is.

Records live in ``registry.json`` beside this module (one JSON object per preset), written by the
maintainers' preset tool from a finished training run and the accuracy measured with the very file
that ships. A preset file is searched for, in order, inside the package (``presets/files/``), in
``$KERAS_CAPSULES_PRESETS``, then in the Keras cache (``~/.keras/keras_capsules/``); a preset with a
``url`` is downloaded only by an explicit :func:`download`, through ``keras.utils.get_file`` with
its SHA-256.
"""

import dataclasses
import json
import os
from typing import Optional

import keras

from keras_capsules.presets.weights_file import PresetFileError, sha256

REGISTRY_FILE = os.path.join(os.path.dirname(__file__), "registry.json")
PACKAGE_DIR = os.path.join(os.path.dirname(__file__), "files")
ENVIRONMENT_VARIABLE = "KERAS_CAPSULES_PRESETS"
CACHE_SUBDIR = "keras_capsules"
#: The constructor arguments a preset fixes that may still be switched off, unless its record says otherwise: the decoder.
REMOVABLE = ("reconstruction",)


@dataclasses.dataclass(frozen=True)
class Preset:
    """One set of trained weights.

    Attributes:
        model: application constructor name (``"EffCapsNet"``).
        name: preset name passed as ``weights=`` (``"mnist"``).
        dataset: dataset it was trained on.
        kwargs: constructor arguments the preset fixes (``variant``, ``reconstruction``, ...;
            ``classes`` and ``input_shape`` included).
        file: file name of the weights (``.npz``, see :mod:`keras_capsules.presets.weights_file`).
        sha256: SHA-256 of that file.
        storage_dtype: dtype of the floating-point weights in the file.
        test_accuracy: accuracy on the full official test set, measured with this file.
        test_examples: size of that test set.
        subset_accuracy: accuracy on the fixed subset below (what the tests check).
        subset: ``{"dataset", "split", "limit"}`` of the fixed subset (its first ``limit`` images).
        parameters: total parameter count of the model the preset builds.
        recipe: ``(model, dataset, variant)`` of the training recipe.
        command: the exact ``keras-capsules train`` command.
        epochs, train_seconds, hardware, library_version, date: how and where it was trained.
        description: what the model is, in a sentence or two (the card's opening).
        limitations: intended use and limitations.
        procedure: the training procedure in a short paragraph.
        log: path, in the source repository, of the training log page (every pause, restart, seed
            and schedule change of the run).
        validation: the validation hold-out of the run, ``{"examples", "seed", "selection", ...}``, or
            ``None``: none held out.
        test_informed: whether any training decision (schedule, continuation, which file ships)
            followed a test score; ``None``: not recorded.
        decisions: one sentence on what those decisions read.
        validation_curve: accuracy on the validation hold-out after each epoch, in order (of the last
            stage for a two-stage recipe: AgreementGLOM's classifier epochs); empty when nothing was
            held out.
        citation: BibTeX of the paper(s) the model comes from.
        notes: short remarks on the evaluation (the paper's figure, a target).
        metrics: further measurements (per-class parse trees, sparsity, ...).
        url: optional download address (used only by :func:`download`).
        removable: constructor arguments that may be switched off against the preset (the decoder:
            ``reconstruction=False`` loads every other layer).

    The model takes the dataset's images as they come (scaled to [0, 1]); :attr:`class_names` names
    its outputs.
    """

    model: str
    name: str
    dataset: str
    kwargs: dict
    file: str
    sha256: str
    test_accuracy: float
    test_examples: int
    subset_accuracy: float
    subset: dict
    parameters: int
    recipe: tuple
    command: str
    epochs: int
    train_seconds: float
    hardware: str
    library_version: str
    date: str
    storage_dtype: str = "float32"
    description: str = ""
    limitations: str = ""
    procedure: str = ""
    log: str = ""
    validation: Optional[dict] = None
    test_informed: Optional[bool] = None
    decisions: str = ""
    validation_curve: tuple = ()
    citation: str = ""
    notes: str = ""
    metrics: dict = dataclasses.field(default_factory=dict)
    url: Optional[str] = None
    removable: tuple = REMOVABLE

    @property
    def key(self):
        """``"Model/name"``."""
        return f"{self.model}/{self.name}"

    @property
    def class_names(self) -> tuple[str, ...]:
        """The names of the model's output classes, in order: its dataset's (``keras_capsules.datasets.class_names``)."""
        from keras_capsules.datasets import class_names

        return class_names(self.dataset)


def _read_registry(path=REGISTRY_FILE):
    if not os.path.isfile(path):
        return {}
    with open(path) as handle:
        records = json.load(handle)
    presets = {}
    for record in records:
        record = dict(
            record,
            recipe=tuple(record["recipe"]),
            removable=tuple(record.get("removable", REMOVABLE)),
            validation_curve=tuple(record.get("validation_curve", ())),
        )
        preset = Preset(**record)
        presets[preset.key] = preset
    return presets


_PRESETS = _read_registry()


def register_preset(preset: Preset) -> Preset:
    """Adds ``preset`` to the registry of this process (tests and private presets); returns it."""
    _PRESETS[preset.key] = preset
    return preset


def unregister_preset(model: str, name: str) -> None:
    """Removes a preset registered with :func:`register_preset`."""
    _PRESETS.pop(f"{model}/{name}", None)


def available(model: str | None = None) -> list[str]:
    """``["Model/name", ...]`` of every registered preset (only ``model``'s when given), sorted."""
    return sorted(key for key, preset in _PRESETS.items() if model is None or preset.model == model)


def get(model: str, name: str) -> Preset:
    """The :class:`Preset` ``name`` of constructor ``model``.

    Raises:
        ValueError: naming the presets of ``model``.
    """
    key = f"{model}/{name}"
    if key not in _PRESETS:
        names = [k.split("/", 1)[1] for k in available(model)]
        raise ValueError(
            f"{model}: argument `weights` expected None, the path to a weights file, or a preset name "
            f"({names if names else 'this model has no presets'}), received {name!r}."
        )
    return _PRESETS[key]


def find(text: str) -> tuple[str, str] | None:
    """``(model, name)`` of the preset ``text`` names, or ``None``.

    ``text`` is ``MODEL/NAME`` or ``MODEL:NAME`` in any case: ``"effcapsnet:MNIST"`` -> ``("EffCapsNet", "mnist")``.
    """
    if not isinstance(text, str):
        return None
    keys = {key.lower(): key for key in _PRESETS}
    key = keys.get(text.replace(":", "/", 1).lower())
    return tuple(key.split("/", 1)) if key else None


def is_preset(model: str, name: object) -> bool:
    """Whether ``name`` names a registered preset of ``model``."""
    return isinstance(name, str) and f"{model}/{name}" in _PRESETS


def search_dirs() -> list[str]:
    """Folders searched for preset files, in order: the package, ``$KERAS_CAPSULES_PRESETS``, the Keras cache."""
    folders = [PACKAGE_DIR]
    if os.environ.get(ENVIRONMENT_VARIABLE):
        folders.append(os.environ[ENVIRONMENT_VARIABLE])
    folders.append(os.path.join(keras_cache_dir(), CACHE_SUBDIR))
    return folders


def keras_cache_dir():
    """Keras' cache folder (``$KERAS_HOME`` or ``~/.keras``)."""
    return os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")


def locate(preset: Preset) -> str:
    """Path of the preset's file, checked against its SHA-256.

    Raises:
        PresetFileError: the file is in none of :func:`search_dirs` (the message says how to get it),
            or its SHA-256 differs (the message names the file).
    """
    for folder in search_dirs():
        path = os.path.join(folder, preset.file)
        if os.path.isfile(path):
            actual = sha256(path)
            if actual != preset.sha256:
                raise PresetFileError(
                    f"preset {preset.key!r}: file {path!r} has SHA-256 {actual}, expected {preset.sha256}; "
                    "it is corrupt or from another version: delete it"
                    + (
                        " and run keras_capsules.presets.download(...) again."
                        if preset.url
                        else " and reinstall keras-capsules."
                    )
                )
            return path
    how = (
        f"fetch it once with keras_capsules.presets.download({preset.model!r}, {preset.name!r}) "
        f"(or `keras-capsules presets --download {preset.key}`)"
        if preset.url
        else f"put {preset.file!r} into one of those folders"
    )
    raise PresetFileError(f"preset {preset.key!r}: file {preset.file!r} not found in {search_dirs()}; {how}.")


def download(model: str, name: str) -> str:
    """Downloads the file of preset ``model/name`` into the Keras cache, checking its SHA-256; returns its path.

    The only way a preset file is ever downloaded (constructors never download).
    """
    preset = get(model, name)
    if not preset.url:
        raise ValueError(
            f"presets.download: preset {preset.key!r} has no download URL; its file ships inside the package."
        )
    # get_file falls back to /tmp/.keras when the cache folder is not writable yet: create it first.
    os.makedirs(os.path.join(keras_cache_dir(), CACHE_SUBDIR), exist_ok=True)
    keras.utils.get_file(
        fname=preset.file,
        origin=preset.url,
        file_hash=preset.sha256,
        hash_algorithm="sha256",
        cache_dir=keras_cache_dir(),
        cache_subdir=CACHE_SUBDIR,
    )
    return locate(preset)
