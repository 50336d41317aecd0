"""Paper models as Keras-Applications-style constructors.

Every constructor takes ``include_top, weights, input_tensor, input_shape, pooling, classes,
classifier_activation, name`` and then capsule-specific options, returns a built model, and has its
paper configurations registered (``list_configurations()``) with their reference parameter counts.
"""

from keras_capsules.applications.capsnet import CapsNet
from keras_capsules.applications.classifier import CapsuleClassifier, ReconstructionLoss
from keras_capsules.applications.eff_capsnet import EffCapsNet
from keras_capsules.applications.registry import get_configuration, list_configurations, register_configuration
from keras_capsules.applications.utils import decode_predictions, preprocess_input

__all__ = [
    "CapsNet",
    "CapsuleClassifier",
    "EffCapsNet",
    "ReconstructionLoss",
    "decode_predictions",
    "get_configuration",
    "list_configurations",
    "preprocess_input",
    "register_configuration",
]
