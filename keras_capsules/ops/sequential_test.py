"""map_in_turn: the values and gradients of a per-slice map, traced once whatever the length."""

import keras
import numpy as np
import pytest

from keras_capsules.ops.sequential import in_turn, map_in_turn
from keras_capsules.testing.gradients import input_gradient


def _slice_function(calls):
    """``x (3, 2) -> (x @ [[1], [2]] squared (3, 1), sum(x) (,))``: outputs of other shapes than the slice."""

    def function(x):
        calls.append(1)
        column = keras.ops.matmul(x, keras.ops.convert_to_tensor([[1.0], [2.0]]))
        return keras.ops.square(column), keras.ops.sum(x)

    return function


@pytest.mark.parametrize("unrolled", [False, True])
def test_map_in_turn_matches_the_slice_by_slice_numpy_values_and_gradient(unrolled):
    x = np.random.default_rng(0).normal(size=(5, 3, 2)).astype("float32")
    squares, sums = map_in_turn(_slice_function([]), x, unrolled=unrolled)
    column = x @ np.array([[1.0], [2.0]], "float32")
    np.testing.assert_allclose(keras.ops.convert_to_numpy(squares), column**2, rtol=1e-6)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(sums), x.sum(axis=(1, 2)), rtol=1e-5)

    def loss(values):
        squares, sums = map_in_turn(_slice_function([]), values, unrolled=unrolled)
        return keras.ops.sum(squares) + keras.ops.sum(sums)

    # d/dx [ (x w)^2 + sum x ] = 2 (x w) w^T + 1, slice by slice
    expected = 2.0 * column * np.array([[1.0, 2.0]], "float32") + 1.0
    np.testing.assert_allclose(input_gradient(loss, x), expected, rtol=1e-5)


def test_map_in_turn_takes_nested_elements():
    a = np.arange(12, dtype="float32").reshape(4, 3)
    b = np.ones((4, 2), "float32")
    out = map_in_turn(lambda pair: keras.ops.sum(pair[0]) * pair[1], (a, b))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(out), a.sum(axis=1)[:, None] * b)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="counts the Python traces of a TensorFlow graph")
def test_map_in_turn_traces_the_function_a_fixed_number_of_times_whatever_the_length():
    import tensorflow as tf

    traces = {}
    for length in (2, 40):
        calls = []
        function = _slice_function(calls)
        tf.function(lambda x: map_in_turn(function, x)).get_concrete_function(tf.TensorSpec((length, 3, 2), "float32"))
        traces[length] = len(calls)
    assert traces[2] == traces[40] <= 2, traces  # the output signature's trace and the loop body's


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="inspects the ops of a TensorFlow graph")
def test_map_in_turn_adds_no_ops_outside_its_loop_and_runs_each_slice_once_when_eager():
    """Tracing the function on a slice for the loop's signature must not leave that slice's work in the
    caller's graph (a dead copy the FLOP count and the memory plan would read), nor run it when eager."""
    import tensorflow as tf

    def function(x):
        return tf.linalg.matmul(x, x, transpose_b=True, name="slice_product")

    graph = (
        tf.function(lambda x: map_in_turn(function, x)).get_concrete_function(tf.TensorSpec((5, 3, 2), "float32")).graph
    )
    assert not [op.name for op in graph.get_operations() if "slice_product" in op.name]
    assert {"While", "StatelessWhile"} & {op.type for op in graph.get_operations()}
    eager_slices = []

    def recording(x):
        if tf.executing_eagerly():
            eager_slices.append(x.numpy())
        return function(x)

    x = np.arange(30, dtype="float32").reshape(5, 3, 2)
    out = map_in_turn(recording, x)
    np.testing.assert_allclose(out.numpy(), np.einsum("nij,nkj->nik", x, x))
    assert len(eager_slices) in (0, 5)  # each slice once (or none, where the loop runs as a graph)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="inspects the ops of a TensorFlow graph")
def test_map_in_turn_unrolled_has_no_loop_and_chains_the_slices():
    import tensorflow as tf

    graph = tf.function(
        lambda x: map_in_turn(
            lambda s: tf.linalg.matmul(s, s, transpose_b=True, name="slice_product"), x, unrolled=True
        )
    )
    graph = graph.get_concrete_function(tf.TensorSpec((3, 4, 2), "float32")).graph
    types = {op.type for op in graph.get_operations()}
    assert not types & {"While", "StatelessWhile", "TensorListReserve"}
    products = [op for op in graph.get_operations() if op.name.startswith("slice_product")]
    assert len(products) == 3

    def upstream(op, seen=None):
        seen = set() if seen is None else seen
        for tensor in op.inputs:
            if tensor.op.name not in seen:
                seen.add(tensor.op.name)
                upstream(tensor.op, seen)
        return seen

    # each slice's product depends on the previous slice's: the executor cannot run them at once
    assert products[0].name in upstream(products[1]) and products[1].name in upstream(products[2])


def test_in_turn_keeps_a_non_finite_part_to_itself():
    # part 0 holds a NaN and an inf; part 1's output must be its own, by NumPy: 2 * x + 1
    parts = [np.array([np.nan, np.inf, 1.0], "float32"), np.array([1.0, -2.0, 3.0], "float32")]
    outputs = in_turn(lambda x: 2.0 * x + 1.0, [keras.ops.convert_to_tensor(p) for p in parts])
    first, second = (keras.ops.convert_to_numpy(o) for o in outputs)
    assert np.isnan(first[0]) and np.isinf(first[1])
    np.testing.assert_array_equal(second, 2.0 * parts[1] + 1.0)
