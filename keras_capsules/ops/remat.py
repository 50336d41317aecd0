"""Rematerialisation of a function that reads Keras variables, safe inside a loop's gradient, and a switch for all of it.

Rematerialisation trades time for memory: the backward pass recomputes what the forward pass did not keep.
:func:`recomputation` turns it off for everything traced inside (the routers' iterations, ``ConvCaps``' votes
and routing), where the step fits in memory without it; :func:`keras_capsules.training.train` chooses from the
memory plan.
"""

import keras

from keras_capsules.ops.trace_setting import TraceSetting

_RECOMPUTING = TraceSetting(True)


def recomputation(enabled):
    """A scope in which the library's rematerialisation is on (``True``, the default outside) or off (``False``).

    Read when a training step is traced: :func:`remat_reading` returns its function unchanged, and a
    ``ConvCaps`` layer routes its whole vote tensor at once and keeps it for the backward pass, as with
    ``remat=False``. Outputs and gradients are the same to float32 rounding; the step keeps every routing
    temporary until its backward pass (more memory) and computes none twice (less time). Wrap the call that
    traces the step (the first ``fit``), not only later calls. Process-wide (replica threads see it too).

    Args:
        enabled: whether to rematerialise.
    """
    return _RECOMPUTING.scope(enabled)


def recomputing():
    """Whether rematerialisation is on here (:func:`recomputation`)."""
    return _RECOMPUTING.get()


def remat_reading(function, weights):
    """``keras.remat(function)`` for a ``function`` whose body reads the Keras variables ``weights``.

    The variables are read once, by the caller, and enter the rematerialised function as inputs;
    inside, a stateless scope that the function opens itself maps each variable to its value, so
    the recomputation in the backward pass, whenever and wherever it runs, reads the same tensors
    and never a variable. TensorFlow cannot recompute a function that reads a variable inside a
    loop's gradient ("... is in list of internal_captures but not in internal_capture_to_output"),
    which a layer routed in a loop (``keras.ops.map``, :func:`~keras_capsules.ops.sequential.map_in_turn`)
    would otherwise need. Values, outputs and gradients are those of ``keras.remat(function)``.

    Args:
        function: ``function(*args)`` -> tensors; positional arguments only.
        weights: the Keras variables ``function`` reads (e.g. a layer's ``trainable_weights``);
            variables it reads that are not listed are read as usual.

    Returns:
        A function of the same arguments; ``function`` itself inside ``recomputation(False)``.
    """
    if not recomputing():
        return function
    return with_weights_as_inputs(keras.remat, function, weights)


def with_weights_as_inputs(transform, function, weights):
    """``transform(function)`` for a ``function`` that reads the Keras variables ``weights``, which enter as inputs.

    The caller reads each variable once and passes the values; inside, a stateless scope maps each
    variable to its value, so whatever ``transform`` makes of the function (a rematerialised one, an
    XLA-compiled one) never holds a variable or a tensor of another graph.

    Args:
        transform: a function decorator, e.g. ``keras.remat`` or ``tf.function(jit_compile=True)``.
        function: ``function(*args)`` -> tensors; positional arguments only.
        weights: the Keras variables ``function`` reads.

    Returns:
        A function of the same arguments.
    """
    weights = list(weights)

    @transform
    def transformed(values, *args):
        with keras.StatelessScope(state_mapping=list(zip(weights, values))):
            return function(*args)

    def call(*args):
        return transformed([weight.value for weight in weights], *args)

    return call
