"""Registration of the library's public Keras objects.

Every public layer, router, loss, metric and model class is registered under the package name
``keras_capsules`` so that ``.keras`` files load with no ``custom_objects``.
"""

import keras

PACKAGE = "keras_capsules"


def register(cls):
    """Class decorator: registers ``cls`` as ``"keras_capsules>ClassName"``."""
    return keras.saving.register_keras_serializable(package=PACKAGE)(cls)
