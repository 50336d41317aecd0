"""ConvTokenizer and PatchEmbedding: shapes, the code's parameter count, and the patch layout by hand."""

import keras
import numpy as np
import pytest

from keras_capsules.layers import glom
from keras_capsules.testing import run_layer_test


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x), dtype="float64")


def test_tokenizer_patch_embedding_shapes_and_parameters():
    tokenizer = glom.ConvTokenizer()
    tokenizer.build((None, 32, 32, 3))
    trainable = sum(int(np.prod(w.shape)) for w in tokenizer.trainable_weights)
    assert trainable == 1_035_328 and tokenizer.count_params() == 1_035_328 + 1_408
    assert tokenizer.compute_output_shape((None, 28, 28, 1)) == (None, 7, 7, 128)
    assert tuple(glom.ConvTokenizer(8)(np.zeros((1, 28, 28, 1), "float32")).shape) == (1, 7, 7, 8)
    x = np.arange(2 * 4 * 6 * 3, dtype="float32").reshape(2, 4, 6, 3)
    out = _np(glom.PatchEmbedding(2)(x))
    assert out.shape == (2, 6, 12)
    np.testing.assert_array_equal(out[1, 4], x[1, 2:4, 2:4].transpose(2, 0, 1).reshape(-1))  # (c, row, col) order
    with pytest.raises(ValueError, match="patch_size=3"):
        glom.PatchEmbedding(3)(x)


def test_layer_contracts():
    images = np.random.default_rng(9).uniform(size=(3, 16, 16, 1)).astype("float32")
    run_layer_test(glom.ConvTokenizer, {"embedding_dim": 4}, images, [(3, 4, 4, 4)], run_export=False)
    run_layer_test(glom.PatchEmbedding, {"patch_size": 2}, images, [(3, 64, 4)], run_saving=False, run_export=False)
