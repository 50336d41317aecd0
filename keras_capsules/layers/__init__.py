"""Capsule layers. Every layer returns ``(poses, activations)`` (DESIGN.md, tensor conventions)."""

from keras_capsules.layers import glom
from keras_capsules.layers.capsule_logits import CapsuleLogits
from keras_capsules.layers.concurrent_routing import ConcurrentRouting
from keras_capsules.layers.conv_caps import ConvCaps
from keras_capsules.layers.conv_decoders import DeconvDecoder, UpsamplingDecoder
from keras_capsules.layers.decoder import CapsuleDecoder
from keras_capsules.layers.fc_caps import FcCaps
from keras_capsules.layers.glom import (  # GLOM (docs/reference/glom.md)
    ClassifierHead,
    ColumnMLP,
    ConsensusAttention,
    ContrastiveAgreement,
    ContrastiveHead,
    ConvTokenizer,
    DissimilarityHead,
    GlomColumns,
    PatchEmbedding,
    SelectLevel,
    WindowAveragePooling,
    WindowHead,
    WindowMaxPooling,
)
from keras_capsules.layers.heads import Length, Mask, Squash
from keras_capsules.layers.initializers import IdentityPlusUniform
from keras_capsules.layers.primary_caps import PrimaryCaps
from keras_capsules.layers.vector_routing import VectorRouting
from keras_capsules.layers.votes import MatrixVotes, VectorVotes

__all__ = [
    "CapsuleDecoder",
    "CapsuleLogits",
    "ConcurrentRouting",
    "ConvCaps",
    "DeconvDecoder",
    "FcCaps",
    "IdentityPlusUniform",
    "Length",
    "Mask",
    "MatrixVotes",
    "PrimaryCaps",
    "Squash",
    "UpsamplingDecoder",
    "VectorRouting",
    "VectorVotes",
]
__all__ += [  # GLOM layers (keras_capsules.layers.glom)
    "ClassifierHead",
    "ColumnMLP",
    "ConsensusAttention",
    "ContrastiveAgreement",
    "ContrastiveHead",
    "ConvTokenizer",
    "DissimilarityHead",
    "GlomColumns",
    "PatchEmbedding",
    "SelectLevel",
    "WindowAveragePooling",
    "WindowHead",
    "WindowMaxPooling",
    "glom",
]
