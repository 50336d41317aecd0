"""Export of a model's inference graph to a SavedModel folder, an ONNX file or a LiteRT file, atomically.

TensorFlow backend, through Keras' own exporters. The result runs without ``keras_capsules`` or Keras:
``tf.saved_model.load(path).serve(images)``, ONNX Runtime, the LiteRT interpreter. A model that names its classes
(``model.class_names``) ships them in output order: ``assets/class_names.json`` in a SavedModel folder, the
metadata entry ``class_names`` (a JSON list) of an ONNX file; a LiteRT file has no place for them.
"""

import functools
import importlib.util
import json
import os

from keras_capsules import errors
from keras_capsules.export import _private_api
from keras_capsules.introspection import all_layers
from keras_capsules.routing import Router
from keras_capsules.saving import atomic, check_output_file, check_output_folder, load_model

#: Formats of :func:`export_model`: a SavedModel folder, an ONNX file, a LiteRT (``.tflite``) file.
EXPORT_FORMATS = ("savedmodel", "onnx", "litert")
_FILE_SUFFIXES = {"onnx": ".onnx", "litert": ".tflite"}
#: Packages each single-file format needs (the ``export`` extra); LiteRT's converter ships with TensorFlow.
_FORMAT_PACKAGES = {"onnx": ("tf2onnx", "onnx")}
#: Where a SavedModel folder keeps the class names (a JSON list, in output order), and the ONNX metadata key.
CLASS_NAMES_ASSET = os.path.join("assets", "class_names.json")
CLASS_NAMES_KEY = "class_names"


def _class_names(model):
    """``model.class_names`` as a list of strings, or ``None``."""
    names = getattr(model, "class_names", None)
    return None if names is None else [str(name) for name in names]


def export_saved_model(model, path, overwrite=False):
    """Exports ``model`` to the SavedModel folder ``path`` atomically (endpoints ``serve`` and ``serving_default``).

    TensorFlow-specific. The export is written to a temporary sibling and renamed into place; an
    existing non-empty folder at ``path`` is replaced only with ``overwrite=True``, and only once the
    new export is complete. An existing file at ``path`` is never replaced. A model that names its classes
    writes them to ``assets/class_names.json``.
    """
    check_output_folder(path, overwrite=overwrite, what="export_saved_model: argument `path`")
    with atomic.atomic_directory(path) as temporary:
        model.export(temporary, format="tf_saved_model", verbose=False)
        names = _class_names(model)
        if names is not None:
            os.makedirs(os.path.join(temporary, "assets"), exist_ok=True)
            with open(os.path.join(temporary, CLASS_NAMES_ASSET), "w", encoding="utf-8") as handle:
                json.dump(names, handle, ensure_ascii=False)
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
    missing = [name for name in _FORMAT_PACKAGES.get(format, ()) if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(
            f"export_model: format={format!r} needs {', '.join(missing)}; install them with "
            f"`pip install 'keras-capsules[export]'`."
        )


def _unsupported(model, format, ops_found, detail):
    """The ``ValueError`` for ops of ``model`` that ``format`` cannot express, naming their layers and routers."""
    text = " ".join(ops_found) + " " + detail
    holders = []
    for layer in all_layers(model):
        if layer.name and any(
            f"/{layer.name}{end}" in text or text.startswith(f"{layer.name}/") for end in ("/", "_1/")
        ):
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
        _private_api.tf2onnx_convert(model, path)
    finally:
        logger.removeHandler(handler)
    try:
        onnx.checker.check_model(path, full_check=True)
    except onnx.checker.ValidationError as error:
        raise _unsupported(model, "onnx", found, str(error)) from None
    if found:
        raise _unsupported(model, "onnx", found, "")
    names = _class_names(model)
    if names is not None:
        proto = onnx.load(path)
        proto.metadata_props.add(key=CLASS_NAMES_KEY, value=json.dumps(names, ensure_ascii=False))
        onnx.save(proto, path)


def _export_litert(model, path):
    import tensorflow as tf

    try:
        model.export(
            path, format="litert", verbose=False, target_spec={"supported_ops": [tf.lite.OpsSet.TFLITE_BUILTINS]}
        )
    except Exception as error:  # the converter raises its own ConverterError with the ops and their locations
        if "ConverterError" not in type(error).__name__ and "converter" not in type(error).__module__:
            raise
        message = str(error)
        ops_found = sorted(
            {line.split("'tf.", 1)[1].split("'", 1)[0] for line in message.splitlines() if "'tf." in line}
        )
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
