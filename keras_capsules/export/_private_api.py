"""The library's only use of private Keras and TensorFlow APIs (``keras.src``, ``tensorflow.python``).

ONNX conversion needs three things no public API offers: Keras' input signature of a model, Keras'
numpy-2 fixes of tf2onnx, and TensorFlow's graph freezing. They are imported here and nowhere else
(``layering_test`` checks it), so a Keras or TensorFlow upgrade that moves them breaks this file only;
``export/formats_test.py`` exports every application to ONNX and would show it.
"""

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
