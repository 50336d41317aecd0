"""Plan from shapes: a model built with its weights' shapes and no values, and one training step traced as a graph.

Building a model allocates its weights at once: EffCapsNet on 768x1024 RGB photos has 1.15 billion
weights in its class capsules (4.6 GB, then twice that of Adam state), enough for the kernel's
out-of-memory killer to end the process before any memory plan runs. :func:`from_shapes` builds it
without that: inside, Keras variables get their shapes and dtypes and no values, and keep none after
(layer names made inside are not counted, so the model built afterwards is named as it would have
been). :func:`~keras_capsules.training.memory_plan.estimate` takes such a model as it takes a built
one: :func:`traced_step` then feeds the weights to the traced step as placeholders (a
``keras.StatelessScope`` mapping each variable to one) and leaves them out of the step's ops, as the
variable reads of a built model are (they are the weights, counted apart).

Use::

    with shape_plan.from_shapes():
        model = applications.EffCapsNet(input_shape=(768, 1024, 3), classes=3)
    model.compile(optimizer="adam", loss=...)  # outside: compiling makes scalars (the loss tracker) with values
    memory_plan.check(memory_plan.estimate(model, batch_size=16))  # refuses before anything is allocated
"""

import contextlib
import inspect
import random

import keras

from keras_capsules import errors
from keras_capsules.export import _private_api

__all__ = ["from_shapes", "is_from_shapes", "traced_step"]


@contextlib.contextmanager
def from_shapes():
    """Within: models are built with weights that have shapes and no values (compile them after, outside).

    Such a model can be planned (:func:`~keras_capsules.training.memory_plan.estimate`), counted
    (``count_params()``) and traced, never run or saved; drop it afterwards. Python's and NumPy's global
    random states are restored at the exit (initializers draw their seeds from them), so the model built
    afterwards gets the weights it would have had.
    """
    import numpy as np

    python_state, numpy_state = random.getstate(), np.random.get_state()
    try:
        with _private_api.deferred_variables():
            yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)


def is_from_shapes(model) -> bool:
    """Whether ``model`` was built in :func:`from_shapes` (some weight has no value)."""
    return any(_private_api.is_deferred(variable) for variable in model.variables)


def _input_specs(model, batch_size, label_shape, label_dtype):
    import tensorflow as tf

    inputs = getattr(model, "inputs", None)
    if not inputs:
        errors.fail(
            "memory_plan.estimate",
            "model",
            "a model with known inputs (functional or Sequential with an Input)",
            f"{type(model).__name__} {model.name!r}",
        )
    specs = []
    for tensor in inputs:
        shape = (batch_size, *tensor.shape[1:])
        if None in shape:
            errors.fail(
                "memory_plan.estimate",
                "model",
                "a model whose inputs have fixed sizes besides the batch",
                f"input shape {tuple(tensor.shape)}",
            )
        specs.append(tf.TensorSpec(shape, tensor.dtype))
    return specs[0] if len(specs) == 1 else specs, tf.TensorSpec((batch_size, *label_shape), label_dtype)


def traced_step(model, batch_size, label_shape=(), label_dtype="int32"):
    """One training step of ``model`` at ``batch_size`` traced as a graph (no step runs).

    The step: ``model(x, training=True)``, the loss (``model.compute_loss`` of a compiled model, else
    the mean square of the float outputs) and ``tape.gradient`` of the trainable weights. A model built
    in :func:`from_shapes` gets its weights as placeholders.

    Returns:
        ``(operations, outputs)``: the graph's ops in creation order, less the weights' placeholders,
        and the gradients.
    """
    import tensorflow as tf

    x_spec, label_spec = _input_specs(model, batch_size, tuple(label_shape), label_dtype)
    compiled = getattr(model, "compiled", False)
    trainable = model.trainable_variables
    # As Keras's own train step: an override of compute_loss may not take `training`.
    training = {"training": True} if "training" in inspect.signature(model.compute_loss).parameters else {}

    def loss_of(x, y):
        y_pred = model(x, training=True)
        if compiled:
            return model.compute_loss(x=x, y=y, y_pred=y_pred, **training)
        floats = [t for t in keras.tree.flatten(y_pred) if t.dtype.is_floating]
        return tf.add_n([tf.reduce_mean(tf.square(tf.cast(t, "float32"))) for t in floats])

    if not is_from_shapes(model):

        def step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_of(x, y)
            return tape.gradient(loss, trainable)

        graph = tf.function(step, autograph=False).get_concrete_function(x_spec, label_spec).graph
        return graph.get_operations(), graph.outputs

    variables = model.variables
    trainable_ids = {id(v) for v in trainable}

    def stateless_step(x, y, values):
        watched = [value for variable, value in zip(variables, values) if id(variable) in trainable_ids]
        with tf.GradientTape() as tape:
            tape.watch(watched)
            with keras.StatelessScope(state_mapping=list(zip(variables, values)), initialize_variables=False):
                loss = loss_of(x, y)
        return tape.gradient(loss, watched)

    value_specs = [tf.TensorSpec(v.shape, v.dtype) for v in variables]
    graph = tf.function(stateless_step, autograph=False).get_concrete_function(x_spec, label_spec, value_specs).graph
    first = (
        len(keras.tree.flatten(x_spec)) + 1
    )  # the placeholders: the inputs, the labels, the weights, then any captures
    weights = {tensor.op.name for tensor in graph.inputs[first : first + len(variables)]}
    return [op for op in graph.get_operations() if op.name not in weights], graph.outputs
