"""Paper models as Keras-Applications-style constructors.

Every constructor takes ``include_top, weights, input_tensor, input_shape, pooling, classes,
classifier_activation, name`` and then capsule-specific options, returns a built model, and has its
paper configurations registered (``list_configurations()``) with their reference parameter counts.
"""

from keras_capsules.applications.agreement_glom import AgreementGLOM
from keras_capsules.applications.capsnet import CapsNet
from keras_capsules.applications.classifier import CapsuleClassifier, ReconstructionLoss
from keras_capsules.applications.consensus_capsnet import ConsensusCapsNet
from keras_capsules.applications.eff_capsnet import EffCapsNet
from keras_capsules.applications.eff_conv_capsnet import EffConvCapsNet
from keras_capsules.applications.fm_capsnet import FMCapsNet
from keras_capsules.applications.inverted_attention_capsnet import InvertedAttentionCapsNet
from keras_capsules.applications.matrix_capsnet import MatrixCapsNet
from keras_capsules.applications.registry import get_configuration, list_configurations, register_configuration
from keras_capsules.applications.utils import decode_predictions, preprocess_input

__all__ = [
    "AgreementGLOM",
    "CapsNet",
    "CapsuleClassifier",
    "ConsensusCapsNet",
    "EffCapsNet",
    "EffConvCapsNet",
    "FMCapsNet",
    "InvertedAttentionCapsNet",
    "MatrixCapsNet",
    "ReconstructionLoss",
    "decode_predictions",
    "get_configuration",
    "list_configurations",
    "preprocess_input",
    "register_configuration",
]
