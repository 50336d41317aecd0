"""Model files: ``.keras`` saving/loading and SavedModel export, written atomically, with clear errors.

A SavedModel exported here is standalone: ``tf.saved_model.load(path).serve(images)`` works in a
process without ``keras_capsules`` (or Keras) installed.
"""

import functools
import json
import os
import zipfile

import keras

from keras_capsules import errors
from keras_capsules.introspection import all_layers
from keras_capsules.training import atomic


class ModelFileError(ValueError):
    """A model file is missing, truncated, corrupt, or not a Keras model."""


def save_model(model, path):
    """Saves ``model`` to the ``.keras`` file ``path`` atomically."""
    if not str(path).endswith(".keras"):
        raise ValueError(f"save_model: argument `path` expected a file name ending in '.keras', received {path!r}.")
    with atomic.atomic_file(path, suffix=".keras") as temporary:
        model.save(temporary)
    return path


def load_model(path, compile=True):
    """Loads a ``.keras`` file, reporting missing, truncated or corrupt files by name.

    Importing this module registers every ``keras_capsules`` layer, so no ``custom_objects`` are needed.

    Raises:
        ModelFileError: naming ``path``, when it is missing, not a ``.keras`` archive, truncated (its
            ``config.json`` or weights), without weights, or otherwise not loadable (Keras' reason follows).
    """
    import keras_capsules.applications  # noqa: F401  (registers the library's layers and models)

    _check_file("load_model", path)
    if not zipfile.is_zipfile(path):
        raise ModelFileError(f"load_model: {path!r} is not a .keras archive (truncated or corrupt); save the model again.")
    try:
        return keras.saving.load_model(path, compile=compile)
    except json.JSONDecodeError as error:
        raise ModelFileError(
            f"load_model: {path!r} is truncated or corrupt (its config.json is not valid JSON: {error}); save the model again."
        ) from None
    except (zipfile.BadZipFile, OSError, KeyError, EOFError) as error:
        raise ModelFileError(f"load_model: {path!r} is truncated or corrupt ({error}); save the model again.") from None
    except ValueError as error:
        raise ModelFileError(f"load_model: {path!r} could not be loaded ({error}).") from None



def open_model(text):
    """The model a command-line argument names: ``(model, preset key)`` for a preset written ``MODEL/NAME``
    or ``MODEL:NAME`` (any case; the application built with those weights), ``(model, None)`` for a
    ``.keras`` file (loaded uncompiled), or ``None`` when ``text`` names neither.
    """
    if text.endswith(".keras") or os.path.isfile(text):
        return load_model(text, compile=False), None
    from keras_capsules import applications, presets

    key = presets.find(text)
    if key is None:
        return None
    return getattr(applications, key[0])(weights=key[1]), key


def _check_file(function, path):
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{function}: argument `path` expected a file path (str or os.PathLike), received {path!r}.")
    if not os.path.isfile(path):
        raise ModelFileError(f"{function}: no such file {os.fspath(path)!r}.")


def load_weights_file(model, path):
    """Loads the weights file ``path`` (``.weights.h5`` or ``.keras``) into ``model``, reporting bad files by name.

    Raises:
        ModelFileError: naming ``path``, when it is missing, truncated, corrupt, or holds weights that do
            not fit ``model`` (Keras' reason follows).
    """
    _check_file("load_weights", path)
    try:
        model.load_weights(path)
    except (zipfile.BadZipFile, OSError, KeyError, EOFError, ValueError) as error:
        raise ModelFileError(
            f"load_weights: {os.fspath(path)!r} could not be loaded into {model.name!r}: it is truncated, corrupt or made "
            f"for another model ({error})."
        ) from None
    return model


def check_output_folder(path, *, overwrite=False, inputs=(), what="output folder"):
    """Refuses to write a folder where that would destroy something the user did not ask to replace.

    Args:
        path: the folder about to be written (created, or replaced as a whole).
        overwrite: allow replacing an existing non-empty folder.
        inputs: files or folders being read (the model being exported): never inside ``path``,
            whatever ``overwrite`` says.
        what: how error messages name ``path``.

    Raises:
        ValueError: ``path`` is an existing file, the current folder or one of its parents, a folder
            holding one of ``inputs``, or a non-empty folder while ``overwrite`` is false.
    """
    target = os.path.realpath(path)
    if os.path.isfile(target) or (os.path.exists(target) and not os.path.isdir(target)):
        raise ValueError(f"{what} {path!r} is an existing file, not a folder; choose another name (nothing was written).")
    cwd = os.path.realpath(os.getcwd())
    if cwd == target or cwd.startswith(target + os.sep):
        raise ValueError(f"{what} {path!r} is the current folder or one of its parents; name a new folder such as {os.path.join(path, 'export')!r}.")
    for item in inputs:
        source = os.path.realpath(item)
        if source == target or source.startswith(target + os.sep):
            raise ValueError(
                f"{what} {path!r} holds the input {item!r}, which replacing it would delete; name a new folder "
                f"such as {os.path.join(path, 'export')!r}."
            )
    if os.path.isdir(target) and os.listdir(target) and not overwrite:
        raise ValueError(f"{what} {path!r} exists and is not empty; pass overwrite=True (CLI: --overwrite) to replace it, or choose another name.")


def export_saved_model(model, path, overwrite=False):
    """Exports ``model`` to the SavedModel folder ``path`` atomically (endpoints ``serve`` and ``serving_default``).

    TensorFlow-specific. The export is written to a temporary sibling and renamed into place; an
    existing non-empty folder at ``path`` is replaced only with ``overwrite=True``, and only once the
    new export is complete. An existing file at ``path`` is never replaced.
    """
    check_output_folder(path, overwrite=overwrite, what="export_saved_model: argument `path`")
    with atomic.atomic_directory(path) as temporary:
        model.export(temporary, format="tf_saved_model", verbose=False)
    return path


def export_keras_file(model_path, output_dir, overwrite=False, format="savedmodel"):
    """Exports the ``.keras`` file ``model_path`` (``keras-capsules export``) with :func:`export_model`.

    ``output_dir`` is the SavedModel folder, or the ``.onnx``/``.tflite`` file for ``format="onnx"`` /
    ``"litert"``. It may not hold or be ``model_path`` (that would delete the model), and an existing
    non-empty folder or existing file is replaced only with ``overwrite=True``; all of this is checked
    before the model is loaded.
    """
    errors.check_one_of("export", "format", format, EXPORT_FORMATS)
    if format == "savedmodel":
        check_output_folder(output_dir, overwrite=overwrite, inputs=(model_path,), what="export: OUTPUT_DIR")
    else:
        _check_export_file(output_dir, format, overwrite, inputs=(model_path,), what="export: OUTPUT")
    return export_model(load_model(model_path, compile=False), output_dir, format=format, overwrite=overwrite)


#: Formats of :func:`export_model`: a SavedModel folder, an ONNX file, a LiteRT (``.tflite``) file.
EXPORT_FORMATS = ("savedmodel", "onnx", "litert")
_FILE_SUFFIXES = {"onnx": ".onnx", "litert": ".tflite"}
#: Packages each single-file format needs (the ``export`` extra); LiteRT's converter ships with TensorFlow.
_FORMAT_PACKAGES = {"onnx": ("tf2onnx", "onnx")}


def check_output_file(path, *, overwrite=False, inputs=(), what="output file"):
    """Refuses to write the file ``path`` where that would destroy something the user did not ask to replace.

    Raises:
        ValueError: ``path`` is an existing folder, one of ``inputs``, or an existing file while
            ``overwrite`` is false.
    """
    target = os.path.realpath(path)
    if os.path.isdir(target):
        raise ValueError(f"{what} {path!r} is an existing folder, not a file; choose a file name (nothing was written).")
    for item in inputs:
        if os.path.realpath(item) == target:
            raise ValueError(f"{what} {path!r} is the input {item!r}, which writing it would destroy; choose another name.")
    if os.path.exists(target) and not overwrite:
        raise ValueError(f"{what} {path!r} exists; pass overwrite=True (CLI: --overwrite) to replace it, or choose another name.")


def export_model(model, path, format="savedmodel", overwrite=False):
    """Exports ``model``'s inference graph (images in, class scores out) to ``format``, atomically.

    TensorFlow backend; Keras' own exporters (``model.export``). The result runs without
    ``keras_capsules`` or Keras:

    - ``"savedmodel"``: the folder ``path`` (:func:`export_saved_model`; TensorFlow serves it).
    - ``"onnx"``: the file ``path`` (``.onnx``), converted by ``tf2onnx`` and validated with
      ``onnx.checker``; ONNX Runtime serves it. Needs the ``export`` extra.
    - ``"litert"``: the file ``path`` (``.tflite``), LiteRT **built-in ops only**, so the plain
      ``ai_edge_litert`` interpreter runs it (no Flex delegate).

    A single file is written under a temporary name and renamed into place; an existing file is
    replaced only with ``overwrite=True``, an existing folder never.

    Raises:
        ValueError: an unknown ``format``; ``path`` with the wrong ending, an existing folder, or an
            existing file without ``overwrite``; a model that cannot be expressed in ``format``: the
            message names the model, the format, the layers and routers holding the unsupported ops,
            and the ops.
        ImportError: the converter for ``format`` is not installed (names the ``export`` extra).
    """
    errors.check_one_of("export_model", "format", format, EXPORT_FORMATS)
    if format == "savedmodel":
        return export_saved_model(model, path, overwrite=overwrite)
    _check_export_file(path, format, overwrite, inputs=(), what="export_model: argument `path`")
    with atomic.atomic_file(path, suffix=_FILE_SUFFIXES[format]) as temporary:
        if format == "onnx":
            _export_onnx(model, temporary)
        else:
            _export_litert(model, temporary)
    return path


def _check_export_file(path, format, overwrite, inputs, what):
    """The checks of a single-file export, before anything is loaded or converted."""
    check_output_file(path, overwrite=overwrite, inputs=inputs, what=what)
    suffix = _FILE_SUFFIXES[format]
    if not os.fspath(path).endswith(suffix):
        raise ValueError(f"{what} expected a file name ending in {suffix!r} for format={format!r}, received {path!r}.")
    _require_packages(format)


def _require_packages(format):
    import importlib.util

    missing = [name for name in _FORMAT_PACKAGES.get(format, ()) if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(
            f"export_model: format={format!r} needs {', '.join(missing)}; install them with "
            f"`pip install 'keras-capsules[export]'`."
        )


def _unsupported(model, format, ops_found, detail):
    """The ``ValueError`` for ops of ``model`` that ``format`` cannot express, naming their layers and routers."""
    from keras_capsules.routing import Router

    text = " ".join(ops_found) + " " + detail
    holders = []
    for layer in all_layers(model):
        if layer.name and any(f"/{layer.name}{end}" in text or text.startswith(f"{layer.name}/") for end in ("/", "_1/")):
            kind = f"router {layer.router_name!r}" if isinstance(layer, Router) else type(layer).__name__
            holders.append(f"{layer.name} ({kind})")
    where = f" in {', '.join(holders)}" if holders else ""
    listed = ", ".join(sorted(set(ops_found))) or detail.strip().splitlines()[-1][:300]
    return ValueError(
        f"export_model: model {model.name!r} cannot be exported to format={format!r}: unsupported ops{where}: {listed}. "
        f"See docs/export.md (formats and their limits)."
    )


def _export_onnx(model, path):
    import logging

    import onnx

    _register_tf2onnx_erfc()
    found = []

    class Collect(logging.Handler):
        def emit(self, record):
            message = record.getMessage()
            if "is not supported" in message and "Tensorflow op [" in message:
                found.append(message.split("Tensorflow op [", 1)[1].split("]", 1)[0])

    logger, handler = logging.getLogger("tf2onnx"), Collect(level=logging.ERROR)
    logger.addHandler(handler)
    try:
        _tf2onnx_convert(model, path)
    finally:
        logger.removeHandler(handler)
    try:
        onnx.checker.check_model(path, full_check=True)
    except onnx.checker.ValidationError as error:
        raise _unsupported(model, "onnx", found, str(error)) from None
    if found:
        raise _unsupported(model, "onnx", found, "")


class _FrozenFunction:
    """What ``tf2onnx.convert.from_function`` needs of a ``tf.function``: its concrete function."""

    def __init__(self, concrete):
        self.concrete = concrete

    def get_concrete_function(self, *signature):
        return self.concrete


def _tf2onnx_convert(model, path):
    """Keras' ONNX export (``model.export(format="onnx")``: ``training=False``, its input signature and
    its numpy-2 fixes of tf2onnx), but with the graph frozen before tf2onnx sees it: tf2onnx turns
    captured constants (e.g. a ``Normalization`` layer's mean and variance) into extra graph inputs."""
    import tensorflow as tf
    import tf2onnx
    from keras.src.export.export_utils import get_input_signature, make_tf_tensor_spec
    from keras.src.export.tf2onnx_lib import patch_tf2onnx
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    signature = keras.tree.map_structure(make_tf_tensor_spec, get_input_signature(model))
    concrete = tf.function(lambda *inputs: model(*inputs, training=False)).get_concrete_function(*signature)
    patch_tf2onnx()
    tf2onnx.convert.from_function(_FrozenFunction(convert_variables_to_constants_v2(concrete)), signature, output_path=path)


def _export_litert(model, path):
    import tensorflow as tf

    try:
        model.export(path, format="litert", verbose=False, target_spec={"supported_ops": [tf.lite.OpsSet.TFLITE_BUILTINS]})
    except Exception as error:  # the converter raises its own ConverterError with the ops and their locations
        if "ConverterError" not in type(error).__name__ and "converter" not in type(error).__module__:
            raise
        message = str(error)
        ops_found = sorted({line.split("'tf.", 1)[1].split("'", 1)[0] for line in message.splitlines() if "'tf." in line})
        raise _unsupported(model, "litert", [f"tf.{op}" for op in ops_found], message) from None


@functools.lru_cache(maxsize=None)
def _register_tf2onnx_erfc():
    """Teaches tf2onnx TensorFlow's ``Erfc`` (exact GELU, e.g. in GLOM) as ``1 - Erf``; it has no handler for it."""
    import numpy as np
    from tf2onnx import utils
    from tf2onnx.handler import tf_op

    if any("Erfc" in opset for opset in tf_op.get_opsets().get("", [])):
        return

    @tf_op("Erfc")
    class Erfc:  # noqa: F841  (registered by the decorator)
        @classmethod
        def version_9(cls, ctx, node, **kwargs):
            dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(node.input[0]))
            one = ctx.make_const(utils.make_name(f"{node.name}_one"), np.array(1, dtype=dtype))
            node.type = "Erf"
            output = node.output[0]
            complement = ctx.insert_new_node_on_output("Sub", output, name=utils.make_name(node.name))
            ctx.replace_inputs(complement, [one.output[0], output])
            ctx.copy_shape(output, complement.output[0])
