"""Position chunks of a convolutional layer's routing: joined and split like the positions they hold."""

import keras
import numpy as np

from keras_capsules.routing.base import join_position_chunks, split_position_chunks


def test_position_chunks_split_and_join_in_each_examples_position_order():
    batch, positions, counts = 2, 5, [2, 2, 1]
    folded = np.arange(batch * positions * 3, dtype="float32").reshape(batch * positions, 3)  # row = example * 5 + position
    parts = [keras.ops.convert_to_numpy(part) for part in split_position_chunks(folded, counts)]
    grid = folded.reshape(batch, positions, 3)
    for part, start, count in zip(parts, (0, 2, 4), counts):
        np.testing.assert_array_equal(part, grid[:, start : start + count].reshape(batch * count, 3))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(join_position_chunks(parts, counts)), folded)
    assert split_position_chunks(folded, [positions])[0] is folded  # one chunk: the tensor itself
