"""The library's only use of private Keras and TensorFlow APIs (``keras.src``, ``tensorflow.python``).

ONNX conversion needs Keras' input signature of a model, its numpy-2 fixes of tf2onnx and TensorFlow's graph
freezing; a model built from its shapes (``training/shape_plan.py``) Keras' pending variables and name counters.
Imported here only (``layering_test`` checks it): an upgrade that moves them breaks this file and its tests.
"""

import contextlib

import keras


class _FrozenFunction:
    """What ``tf2onnx.convert.from_function`` needs of a ``tf.function``: its concrete function."""

    def __init__(self, concrete):
        self.concrete = concrete

    def get_concrete_function(self, *signature):
        return self.concrete


def tf2onnx_convert(model, path):
    """Writes ``model``'s ONNX graph to ``path`` with tf2onnx, as Keras' ``model.export(format="onnx")``
    (``training=False``, its input signature, its numpy-2 fixes of tf2onnx), but with the graph frozen
    before tf2onnx sees it: tf2onnx turns captured constants (e.g. a ``Normalization`` layer's mean and
    variance) into extra graph inputs. Needs ``tf2onnx`` (the ``export`` extra)."""
    import tensorflow as tf
    import tf2onnx
    from keras.src.export.export_utils import get_input_signature, make_tf_tensor_spec
    from keras.src.export.tf2onnx_lib import patch_tf2onnx
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    signature = keras.tree.map_structure(make_tf_tensor_spec, get_input_signature(model))
    concrete = tf.function(lambda *inputs: model(*inputs, training=False)).get_concrete_function(*signature)
    patch_tf2onnx()
    tf2onnx.convert.from_function(
        _FrozenFunction(convert_variables_to_constants_v2(concrete)), signature, output_path=path
    )


@contextlib.contextmanager
def deferred_variables():
    """Within: variables get shapes and no values, never given any later; layer names made within are not counted."""
    from keras.src.backend.common import global_state

    waiting = list(global_state.get_global_attribute("uninitialized_variables", [], set_to_default=True))
    names = global_state.get_global_attribute("object_name_uids")
    names = None if names is None else names.copy()
    try:
        with keras.StatelessScope(initialize_variables=False):
            yield
    finally:
        global_state.set_global_attribute("uninitialized_variables", waiting)
        global_state.set_global_attribute("object_name_uids", names)


def is_deferred(variable):
    """Whether the Keras ``variable`` was made in :func:`deferred_variables` (a shape, no value)."""
    return getattr(variable, "_value", True) is None
