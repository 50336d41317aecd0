"""GLOM's contrastive and classifier heads: parameter counts by hand, contracts and argument errors."""

import numpy as np
import pytest

from keras_capsules.layers import glom
from keras_capsules.testing import run_layer_test


def test_contrastive_head_parameter_count_with_a_hidden_width_of_its_own():
    # n = 3 tokens of d = 4, hidden 6 != n*d, projection 8: LN(d) 2*4, LN(n*d) 2*12, two LN(hidden)
    # 4*6, Linear(12 -> 6) 13*6, Linear(6 -> 8) 7*8: 190, by hand.
    head = glom.ContrastiveHead(projection_dim=8, hidden_dim=6)
    head(np.zeros((2, 3, 4), "float32"))
    assert sum(int(np.prod(w.shape)) for w in head.trainable_weights) == 8 + 24 + 24 + 78 + 56


def test_layer_contracts():
    tokens = np.random.default_rng(9).normal(size=(3, 16, 8)).astype("float32")
    run_layer_test(glom.ContrastiveHead, {"projection_dim": 6}, tokens, [(3, 6)], run_export=False)
    run_layer_test(
        glom.ClassifierHead, {"classes": 3, "hidden_dim": 0}, tokens[:, 0], [(3, 3)], run_saving=False, run_export=False
    )


def test_argument_errors_name_layer_and_argument():
    with pytest.raises(ValueError, match=r"ContrastiveHead.*dropout"):
        glom.ContrastiveHead(dropout=1.5)
