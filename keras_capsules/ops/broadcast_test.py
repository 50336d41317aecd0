import keras
import numpy as np
import pytest

from keras_capsules.ops.broadcast import broadcast_rows
from keras_capsules.testing import input_gradient


@pytest.mark.parametrize("rows", [(3, 2, 1), (4,)])
def test_values_and_gradient_are_broadcast_to_s(rows):
    rng = np.random.default_rng(0)
    parameter = rng.normal(size=5).astype("float32")
    weights = rng.normal(size=rows + (5,)).astype("float32")
    got = keras.ops.convert_to_numpy(broadcast_rows(keras.ops.convert_to_tensor(parameter), rows))
    np.testing.assert_array_equal(got, np.broadcast_to(parameter, rows + (5,)))
    # d/dp sum(w * broadcast(p)) = the sum of w over every leading axis
    gradient = input_gradient(lambda p: keras.ops.multiply(broadcast_rows(p, rows), weights), parameter)
    np.testing.assert_allclose(gradient, weights.reshape(-1, 5).astype("float64").sum(0), rtol=1e-6, atol=1e-6)
