import keras
import numpy as np
import pytest

from keras_capsules.layers import CapsuleLogits
from keras_capsules.testing import run_layer_test


def test_logits_are_one_shared_linear_map_of_each_class_pose():
    poses = np.random.default_rng(0).normal(size=(3, 5, 16)).astype("float32")
    layer = CapsuleLogits()
    logits = keras.ops.convert_to_numpy(layer(poses))
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in (layer.kernel, layer.bias))
    assert kernel.shape == (16, 1) and bias.shape == (1,)
    np.testing.assert_allclose(logits, np.einsum("bcd,d->bc", poses, kernel[:, 0]) + bias[0], rtol=1e-5, atol=1e-6)
    # PyTorch's Linear initialisation: U(-1/sqrt(d), 1/sqrt(d)) for kernel and bias
    assert np.all(np.abs(kernel) <= 0.25) and np.all(np.abs(bias) <= 0.25) and kernel.std() > 0.05


def test_layer_contract():
    run_layer_test(
        CapsuleLogits,
        {},
        np.random.default_rng(1).normal(size=(3, 4, 9)).astype("float32"),
        expected_output_shapes=[(3, 4)],
    )


def test_rank_error_names_the_layer():
    with pytest.raises(ValueError, match=r"CapsuleLogits.*inputs.*rank 3"):
        CapsuleLogits()(np.zeros((2, 16), "float32"))
