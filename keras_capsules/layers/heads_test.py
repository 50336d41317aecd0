import keras
import numpy as np
import pytest

from keras_capsules.layers import CapsuleDecoder, Length, Mask, Squash
from keras_capsules.testing import run_layer_test


def test_length_and_squash_layers():
    v = np.array([[[3.0, 4.0], [0.0, 0.0]]], "float32")
    np.testing.assert_allclose(keras.ops.convert_to_numpy(Length()(v)), [[5.0, np.sqrt(1e-7)]], rtol=1e-5)
    out = run_layer_test(Squash, {"kind": "squash"}, np.tile(v, (3, 1, 1)), run_export=False)[0]
    np.testing.assert_allclose(np.linalg.norm(out[0, 0]), 25 / 26, rtol=1e-5)


def test_mask_by_label_and_by_length():
    poses = np.zeros((2, 3, 2), "float32")
    poses[0, 1] = [1.0, 1.0]
    poses[0, 2] = [0.1, 0.0]
    poses[1, 0] = [0.5, 0.0]
    poses[1, 2] = [0.0, 2.0]
    by_length = keras.ops.convert_to_numpy(Mask()(poses))
    np.testing.assert_allclose(by_length, [[0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 0, 2]])
    by_label = keras.ops.convert_to_numpy(Mask()(poses, np.array([2, 0])))
    np.testing.assert_allclose(by_label, [[0, 0, 0, 0, 0.1, 0], [0.5, 0, 0, 0, 0, 0]])
    by_multi_hot = keras.ops.convert_to_numpy(Mask()(poses, np.array([[0, 1, 1], [1, 0, 0]], "float32")))
    np.testing.assert_allclose(by_multi_hot, [[0, 0, 1, 1, 0.1, 0], [0.5, 0, 0, 0, 0, 0]])
    top2 = keras.ops.convert_to_numpy(Mask(top_k=2)(poses))
    np.testing.assert_allclose(top2[1], [0.5, 0, 0, 0, 0, 2])


def test_decoder_parameters_and_shape():
    decoder = CapsuleDecoder((28, 28, 1))
    out = decoder(np.zeros((2, 160), "float32"))
    assert tuple(out.shape) == (2, 28, 28, 1)
    assert decoder.count_params() == 1_411_344  # ALGORITHMS.md §4.2 / Sabour decoder
    run_layer_test(CapsuleDecoder, {"image_shape": (4, 4, 1), "hidden_units": (8,)}, np.ones((3, 6), "float32"), run_export=False)
    with pytest.raises(ValueError, match="image_shape"):
        CapsuleDecoder((0, 28))
