"""A map over a tensor's leading axis that runs one element at a time, forward and backward."""

import keras
from keras import ops, tree


def map_in_turn(function, elements):
    """``function`` applied to each slice ``elements[i]`` along the leading axis, one slice after another.

    Like ``keras.ops.map`` (the loop is traced once, whatever the length), but the slices take
    turns: each one's temporaries are freed before the next starts, in the forward pass and in the
    gradient. TensorFlow's ``map_fn`` lets ten iterations run at once inside a graph
    (``parallel_iterations``), which would keep ten slices' temporaries alive; here it is one.
    JAX's ``lax.map`` is sequential already; other backends loop in Python.

    Args:
        function: ``function(slice)`` -> a tensor or a (nested) tuple of tensors whose shapes do not
            depend on the slice's position.
        elements: a tensor ``(n, ...)`` or a (nested) tuple of them with the same ``n``.

    Returns:
        ``function``'s outputs stacked along a new leading axis of length ``n``.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        elements = tree.map_structure(ops.convert_to_tensor, elements)
        first = tree.map_structure(lambda x: x[0], elements)
        signature = tree.map_structure(tf.TensorSpec.from_tensor, function(first))
        return tf.map_fn(function, elements, fn_output_signature=signature, parallel_iterations=1)
    return ops.map(function, elements)
