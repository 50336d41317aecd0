"""A function compiled by XLA on its own, inside an otherwise ordinary TensorFlow graph, and the scopes that turn
routers' compilation on at inference or off everywhere."""

import keras

from keras_capsules.ops.remat import with_weights_as_inputs
from keras_capsules.ops.trace_setting import TraceSetting


def compiled_reading(function, weights):
    """``function`` compiled by XLA as one unit (TensorFlow backend; elsewhere ``function`` itself).

    On the TensorFlow backend the function becomes ``tf.function(jit_compile=True)``: called inside a
    training step, it is one XLA cluster in the step's graph (its gradient another), so its
    elementwise chains are fused into the reductions that read them instead of each writing a
    tensor, while the rest of the step (convolutions through oneDNN) runs as before. JAX compiles
    the whole step with XLA already, so there it is returned unchanged, as on PyTorch.

    The Keras variables ``weights`` are read once, by the caller, and enter the compiled function as
    inputs (as :func:`~keras_capsules.ops.remat.remat_reading` does): a compiled function traced in
    one graph then never holds a variable or a tensor of another graph (a loop body's, a
    rematerialised function's).

    Args:
        function: ``function(*args)`` -> tensors; positional tensor arguments only, Python values by closure.
        weights: the Keras variables ``function`` reads.

    Returns:
        A function of the same arguments and values (to float32 rounding: XLA may reorder sums).
    """
    if keras.backend.backend() != "tensorflow":
        return function
    import tensorflow as tf

    return with_weights_as_inputs(tf.function(jit_compile=True, autograph=False), function, weights)


_COMPILING_INFERENCE = TraceSetting(False)


def compiled_inference(enabled=True):
    """A scope in which routers that compile their training calls (``jit_compile``) compile inference calls too.

    For work that runs inference many times and exports nothing, such as an adversarial attack's input
    gradients (:func:`keras_capsules.evaluation.adversarial_examples` uses it): XLA fuses each routing
    iteration's elementwise chain there as it does in training. Exports trace outside it, so their graphs
    stay plain. Read when a call is traced; outputs are the same to float32 rounding.

    Args:
        enabled: whether inference calls compile.
    """
    return _COMPILING_INFERENCE.scope(enabled)


def compiling_inference():
    """Whether inference calls of compiling routers compile here (:func:`compiled_inference`)."""
    return _COMPILING_INFERENCE.get()


_ROUTER_COMPILATION = TraceSetting(True)


def router_compilation(enabled):
    """A scope in which routers compile as their ``jit_compile`` says (``True``, the default outside) or never
    (``False``): every call traces the plain graph.

    For code that reads a step's graph op by op, such as the memory plan (an XLA cluster is one opaque op
    there, its temporaries unseen). Read when a call is traced.

    Args:
        enabled: whether routers may compile.
    """
    return _ROUTER_COMPILATION.scope(enabled)


def routers_may_compile():
    """Whether routers may compile here (:func:`router_compilation`)."""
    return _ROUTER_COMPILATION.get()
