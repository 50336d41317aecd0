"""GLOM layers of the agreement-aware, dissimilarity-oriented GLOM (Zeng et al.; docs/reference/glom.md).

Tokenizer and patch embedding -> :class:`GlomColumns` (column MLPs, :class:`ConsensusAttention`,
:class:`ContrastiveAgreement`, fusion of eq. 8) -> a window head (:class:`DissimilarityHead` ``H_d``,
or :class:`WindowAveragePooling` / :class:`WindowMaxPooling`) -> :class:`ContrastiveHead` (H1) /
:class:`ClassifierHead` (H2).
"""

from keras_capsules.layers.glom.column_mlp import ColumnMLP
from keras_capsules.layers.glom.columns import GlomColumns, SelectLevel, default_agreement_thresholds
from keras_capsules.layers.glom.consensus_attention import ConsensusAttention
from keras_capsules.layers.glom.contrastive_agreement import ContrastiveAgreement
from keras_capsules.layers.glom.dissimilarity_head import DissimilarityHead
from keras_capsules.layers.glom.heads import ClassifierHead, ContrastiveHead
from keras_capsules.layers.glom.pooling_heads import WindowAveragePooling, WindowMaxPooling
from keras_capsules.layers.glom.tokenizer import ConvTokenizer, PatchEmbedding
from keras_capsules.layers.glom.window_head import WindowHead

__all__ = [
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
    "default_agreement_thresholds",
]
