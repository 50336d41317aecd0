"""Capsule layers. Every layer returns ``(poses, activations)`` (DESIGN.md, tensor conventions)."""

from keras_capsules.layers.conv_caps import ConvCaps
from keras_capsules.layers.decoder import CapsuleDecoder
from keras_capsules.layers.fc_caps import FcCaps
from keras_capsules.layers.heads import Length, Mask, Squash
from keras_capsules.layers.primary_caps import PrimaryCaps
from keras_capsules.layers.votes import MatrixVotes, VectorVotes

__all__ = [
    "CapsuleDecoder",
    "ConvCaps",
    "FcCaps",
    "Length",
    "Mask",
    "MatrixVotes",
    "PrimaryCaps",
    "Squash",
    "VectorVotes",
]
