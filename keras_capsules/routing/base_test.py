"""Position chunks of a convolutional layer's routing: stacked and unstacked like the positions they hold; vote limits."""

import keras
import numpy as np

from keras_capsules.ops.norms import limit_magnitude
from keras_capsules.routing.base import limit_votes, stack_position_chunks, unstack_position_chunks


def test_position_chunks_stack_and_unstack_in_each_examples_position_order():
    batch, positions, chunks = 2, 6, 3
    folded = np.arange(batch * positions * 3, dtype="float32").reshape(
        batch * positions, 3
    )  # row = example * 6 + position
    stacked = keras.ops.convert_to_numpy(stack_position_chunks(folded, positions, chunks))
    grid = folded.reshape(batch, positions, 3)
    assert stacked.shape == (chunks, batch * 2, 3)
    for chunk in range(chunks):  # chunk c: positions 2c, 2c + 1 of example 0, then of example 1
        np.testing.assert_array_equal(stacked[chunk], grid[:, 2 * chunk : 2 * chunk + 2].reshape(batch * 2, 3))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(unstack_position_chunks(stacked, 2)), folded)


def test_limit_votes_is_limit_magnitude_over_each_example():
    """``limit_votes`` (max|votes| from the largest and the smallest vote) gives ``limit_magnitude``'s values bit for bit:
    votes within the limit unchanged, an example whose largest magnitude is a negative vote or a positive one scaled."""
    votes = np.random.default_rng(0).normal(size=(4, 5, 3, 4)).astype("float32")
    votes[1, 2, 1, 3] = -3e17  # the largest magnitude is negative
    votes[2, 0, 2, 1] = 5e16
    votes[3] *= 1e-30
    expected = keras.ops.convert_to_numpy(limit_magnitude(votes, axis=(1, 2, 3)))
    limited = keras.ops.convert_to_numpy(limit_votes(votes))
    np.testing.assert_array_equal(limited, expected)
    np.testing.assert_array_equal(limited[[0, 3]], votes[[0, 3]])
    assert np.abs(limited[1]).max() == np.float32(1e15)
