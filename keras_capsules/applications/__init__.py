"""Paper models as Keras-Applications-style constructors.

Every constructor takes ``include_top, weights, input_tensor, input_shape, pooling, classes,
classifier_activation, name, include_preprocessing``, then its selector (``variant=``, where it has
several configurations), then ``router``/``routing_iterations`` and the other capsule options; it
returns a built :class:`CapsuleClassifier` (a functional ``keras.Model``, with or without a
reconstruction decoder) and has its paper configurations registered (``list_configurations()``)
with their reference parameter counts. The shared conventions:

- ``classifier_activation=None`` (default): the output layer ``"predictions"`` passes the model's
  scores through unchanged (capsule lengths or class activations for the margin and spread losses,
  logits for cross-entropy, as each paper trains); any Keras activation, e.g. ``"softmax"``, is
  applied by that layer.
- ``include_top=False``: the capsules that feed the class layer; a grid as a ``(batch, H, W, C)``
  map that ``pooling="avg"``/``"max"`` pools to ``(batch, C)``; fully connected capsules flattened
  to ``(batch, C)``, where a ``pooling`` other than ``None`` is an error (as it is with
  ``include_top=True``).
- Inputs are images in [0, 1] (what ``keras_capsules.datasets.load`` gives, and
  :func:`preprocess_input` makes of [0, 255] images); ``include_preprocessing=True`` adds a
  ``Rescaling(1/255)`` layer so the model takes [0, 255] images. Any other normalisation a paper
  applies (the CIFAR standardisation of ``InvertedAttentionCapsNet``) is a layer of the model.
- ``router`` is a registered name, a config dict or a ``Router`` instance (a template: each
  capsule layer gets its own router built from it, :func:`keras_capsules.routing.resolve`). A model
  takes every registered router, the user's included, with the capabilities it needs
  (``routing.available(pose="matrix")`` for matrix capsules; its ``router`` argument says which)
  and refuses the others with an error that lists those that fit. ``routing_iterations=None`` keeps the
  router's own iterations; a value replaces them.

A new application is one module: its body and settings as a :class:`builder.Application`, a constructor
with the signature above that returns ``builder.build(APPLICATION, locals())``, and its configurations
registered with their parameter counts and ``test_settings`` (the registry and contract tests then
check it).
"""

from keras_capsules.applications.agreement_glom import AgreementGLOM
from keras_capsules.applications.baseline_cnn import BaselineCNN
from keras_capsules.applications.capsnet import CapsNet
from keras_capsules.applications.classifier import CapsuleClassifier, ReconstructionLoss
from keras_capsules.applications.consensus_capsnet import ConsensusCapsNet
from keras_capsules.applications.eff_capsnet import EffCapsNet
from keras_capsules.applications.eff_conv_capsnet import EffConvCapsNet
from keras_capsules.applications.fm_capsnet import FMCapsNet
from keras_capsules.applications.heinsen_capsnet import HeinsenCapsNet
from keras_capsules.applications.inverted_attention_capsnet import InvertedAttentionCapsNet
from keras_capsules.applications.io import decode_predictions, preprocess_input
from keras_capsules.applications.matrix_capsnet import MatrixCapsNet
from keras_capsules.applications.registry import get_configuration, list_configurations, register_configuration
from keras_capsules.applications.sr_capsnet import SRCapsNet
from keras_capsules.applications.vb_capsnet import VBCapsNet

__all__ = [
    "AgreementGLOM",
    "BaselineCNN",
    "CapsNet",
    "CapsuleClassifier",
    "ConsensusCapsNet",
    "EffCapsNet",
    "EffConvCapsNet",
    "FMCapsNet",
    "HeinsenCapsNet",
    "InvertedAttentionCapsNet",
    "MatrixCapsNet",
    "ReconstructionLoss",
    "SRCapsNet",
    "VBCapsNet",
    "decode_predictions",
    "get_configuration",
    "list_configurations",
    "preprocess_input",
    "register_configuration",
]
