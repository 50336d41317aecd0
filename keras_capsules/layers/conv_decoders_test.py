import keras
import numpy as np
import pytest

from keras_capsules.layers import DeconvDecoder, UpsamplingDecoder
from keras_capsules.testing import run_layer_test


def count(weights):
    return int(sum(np.prod(w.shape) for w in weights))


def test_upsampling_decoder_shapes_and_parameter_count():
    out = run_layer_test(
        UpsamplingDecoder,
        {"image_shape": (48, 48, 2)},
        np.random.default_rng(0).normal(size=(3, 160)).astype("float32"),
        expected_output_shapes=[(3, 48, 48, 2)],
        run_export=False,
    )[0]
    assert out.min() >= 0 and out.max() <= 1  # sigmoid output
    decoder = UpsamplingDecoder((48, 48, 2))
    decoder.build((None, 160))
    # seed Dense 160 -> 64, then 3x3 convs 1 -> 64 -> 128 -> 128 and the 3x3 output conv 128 -> 2
    by_hand = (160 * 64 + 64) + (9 * 1 * 64 + 64) + (9 * 64 * 128 + 128) + (9 * 128 * 128 + 128) + (9 * 128 * 2 + 2)
    assert count(decoder.trainable_weights) == by_hand == 234_690
    # 8x8 seed -> x2, valid 3x3 -> 14 -> 26 -> 50 -> valid output conv -> 48 = 8 * 8 - 16
    small = UpsamplingDecoder((32, 32, 1), seed_size=6, filters=(4, 4, 4))
    assert tuple(small(np.zeros((2, 16), "float32")).shape) == (2, 32, 32, 1)


def test_deconv_decoder_reads_the_masked_capsule_and_counts():
    decoder = DeconvDecoder((40, 40, 1))
    masked = np.zeros((2, 10, 16), "float32")
    masked[0, 3] = masked[1, 7] = np.random.default_rng(1).normal(size=16)
    out = keras.ops.convert_to_numpy(decoder(masked.reshape(2, 160)))
    np.testing.assert_allclose(out[0], out[1], rtol=1e-5)  # same pose, different class slot
    assert decoder.compute_output_shape((None, 160)) == (None, 40, 40, 1)
    # Dense 16 -> 6400, BN 6400, ConvT 5x5 64 -> 32, BN 32, ConvT 32 -> 16, BN 16, ConvT 16 -> 1
    trainable = (
        (16 * 6400 + 6400) + 2 * 6400 + (25 * 64 * 32 + 32) + 2 * 32 + (25 * 32 * 16 + 16) + 2 * 16 + (25 * 16 + 1)
    )
    assert count(decoder.trainable_weights) == trainable == 186_145
    assert count(decoder.weights) - trainable == 2 * (6400 + 32 + 16)  # moving statistics
    assert len(decoder.losses) == 3  # L2 on the three transposed-convolution kernels


def test_deconv_decoder_layer_contract():
    run_layer_test(
        DeconvDecoder,
        {"image_shape": (8, 8, 2), "capsule_dim": 4, "base": 2, "filters": 8, "weight_decay": 0.0},
        np.random.default_rng(2).normal(size=(3, 12)).astype("float32"),
        expected_output_shapes=[(3, 8, 8, 2)],
        run_export=False,
    )


def test_errors_name_the_layer_and_argument():
    with pytest.raises(ValueError, match="DeconvDecoder.*image_shape"):
        DeconvDecoder((28, 28, 1))
    with pytest.raises(ValueError, match="UpsamplingDecoder.*image_shape.*48, 48"):
        UpsamplingDecoder((28, 28, 1))
    with pytest.raises(ValueError, match="DeconvDecoder.*inputs.*multiple of capsule_dim=16"):
        DeconvDecoder((40, 40, 1))(np.zeros((1, 20), "float32"))
    with pytest.raises(ValueError, match="UpsamplingDecoder.*inputs.*rank 2"):
        UpsamplingDecoder((48, 48, 1))(np.zeros((1, 10, 16), "float32"))
