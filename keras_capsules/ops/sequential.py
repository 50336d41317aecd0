"""Running a function on parts one after another, forward and backward: a map over a leading axis, or a chain of parts."""

import keras
from keras import ops, tree


def map_in_turn(function, elements, unrolled=False):
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
        unrolled: no loop op: ``function`` is traced once per slice, each slice's input waiting for
            the previous slice's output (a graph without loops, which the ONNX and LiteRT converters
            take; for inference: each slice's gradient would be a zero-padded tensor of the whole).

    Returns:
        ``function``'s outputs stacked along a new leading axis of length ``n``.
    """
    if unrolled:
        return _unrolled_in_turn(function, elements)
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        elements = tree.map_structure(ops.convert_to_tensor, elements)
        # The loop's signature from a trace in a graph of its own: ``function`` applied to the first
        # slice here would leave that slice's ops in the caller's graph (and run them when eager).
        slice_spec = tree.map_structure(lambda x: tf.TensorSpec(x.shape[1:], x.dtype), elements)
        outputs = tf.function(function, autograph=False).get_concrete_function(slice_spec).structured_outputs
        signature = tree.map_structure(tf.TensorSpec.from_tensor, outputs)
        return tf.map_fn(function, elements, fn_output_signature=signature, parallel_iterations=1)
    return ops.map(function, elements)


def _unrolled_in_turn(function, elements):
    """:func:`map_in_turn` with ``unrolled=True``: :func:`in_turn` over the slices, stacked."""
    count = tree.flatten(elements)[0].shape[0]
    parts = [tree.map_structure(lambda x: x[index], elements) for index in range(count)]
    outputs = in_turn(function, parts)
    return tree.map_structure(lambda *parts: ops.stack(parts), *outputs)


def in_turn(function, parts):
    """``[function(part) for part in parts]`` with each part waiting for the previous part's output.

    A Python loop (``function`` is traced once per part, and the parts may differ in shape), chained
    by a zero token so that a graph executor runs one part's ops after another's and frees each
    part's temporaries before the next starts: a graph without loops, which the ONNX and LiteRT
    converters take.

    Args:
        function: ``function(part)`` -> a tensor or a (nested) tuple of tensors.
        parts: a list of tensors or (nested) tuples of tensors.

    Returns:
        The list of ``function``'s outputs, one per part.
    """
    outputs = []
    for part in parts:
        if outputs:
            # Graph executors run independent ops in any order: adding a zero computed from the previous
            # part's output makes this part wait for it (and, backward, that part's gradient for this one's).
            # Zero also where that value is NaN or infinite (0 * inf is NaN): one bad input in a part must
            # not spread to the parts after it.
            leaves = tree.flatten(part)
            first = ops.reshape(tree.flatten(outputs[-1])[0], (-1,))[:1]
            token = ops.where(ops.isfinite(first), first * 0, ops.zeros_like(first))
            leaves[0] = ops.add(leaves[0], ops.cast(token, leaves[0].dtype))  # a NumPy slice too (PyTorch)
            part = tree.pack_sequence_as(part, leaves)
        outputs.append(function(part))
    return outputs
