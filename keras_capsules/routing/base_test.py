"""Position chunks of a convolutional layer's routing: joined and split like the positions they hold."""

import keras
import numpy as np

from keras_capsules.ops.norms import limit_magnitude
from keras_capsules.routing.base import join_position_chunks, limit_votes, split_position_chunks


def test_position_chunks_split_and_join_in_each_examples_position_order():
    batch, positions, counts = 2, 5, [2, 2, 1]
    folded = np.arange(batch * positions * 3, dtype="float32").reshape(batch * positions, 3)  # row = example * 5 + position
    parts = [keras.ops.convert_to_numpy(part) for part in split_position_chunks(folded, counts)]
    grid = folded.reshape(batch, positions, 3)
    for part, start, count in zip(parts, (0, 2, 4), counts):
        np.testing.assert_array_equal(part, grid[:, start : start + count].reshape(batch * count, 3))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(join_position_chunks(parts, counts)), folded)
    assert split_position_chunks(folded, [positions])[0] is folded  # one chunk: the tensor itself


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
