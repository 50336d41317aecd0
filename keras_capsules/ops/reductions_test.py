"""max_with_initial / min_with_initial against NumPy's ``max``/``min`` with ``initial``, empty tensors included,
on whichever backend runs the tests (the PyTorch tier takes the path that compares on the tensor's device)."""

import numpy as np
import pytest
from keras import ops

from keras_capsules.ops.reductions import max_with_initial, min_with_initial

CASES = [
    ((2, 3, 4), None, False),
    ((2, 3, 4), -1, True),
    ((2, 3, 4), (1, 2), True),
    ((2, 3, 4), (0, -1), False),
    ((0, 3, 4), (1, 2), True),  # batch 0: every slice empty
    ((0, 3), None, False),
    ((2, 0, 4), 1, False),  # the reduced axis empty: initial everywhere
]


@pytest.mark.parametrize("shape, axis, keepdims", CASES)
@pytest.mark.parametrize("initial", [0.25, float("-inf")])
def test_max_and_min_with_initial_match_numpy(shape, axis, keepdims, initial):
    x = np.random.default_rng(0).uniform(-1.0, 1.0, size=shape).astype("float32")
    got = ops.convert_to_numpy(max_with_initial(ops.convert_to_tensor(x), initial, axis=axis, keepdims=keepdims))
    np.testing.assert_array_equal(got, np.max(x, axis=axis, keepdims=keepdims, initial=initial))
    got = ops.convert_to_numpy(min_with_initial(ops.convert_to_tensor(x), -initial, axis=axis, keepdims=keepdims))
    np.testing.assert_array_equal(got, np.min(x, axis=axis, keepdims=keepdims, initial=-initial))
    assert got.dtype == np.float32
