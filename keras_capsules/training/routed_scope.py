"""Marks the ops routed capsule layers make while a training step is traced: their methods run in the name scope
:data:`ROUTED_SCOPE`, so a memory plan can tell the votes' share of the live tensors."""

import contextlib
import functools
import inspect
import re

import keras

from keras_capsules.introspection import all_layers
from keras_capsules.routing import Router

#: The name scope the methods of routed capsule layers run in while the step is traced (see :func:`routed_scope`).
ROUTED_SCOPE = "memory_plan_routed"


def routed_layers(model):
    """The layers of ``model`` that route: routers, the layers that hold one, and the layers (not models) that hold those
    (``ConcurrentRouting``, which calls its capsule layers' methods directly)."""
    layers = [layer for layer in all_layers(model) if not isinstance(layer, keras.Model)]
    routes = lambda layer: isinstance(layer, Router) or isinstance(getattr(layer, "router", None), Router)  # noqa: E731
    return [layer for layer in layers if routes(layer) or any(routes(inner) for inner in all_layers(layer))]


def in_routed_scope(op_name):
    """Whether ``op_name`` lies under :data:`ROUTED_SCOPE` (TensorFlow numbers a scope entered again: ``_1``, ``_2``...)."""
    return any(re.fullmatch(rf"{ROUTED_SCOPE}(_\d+)?", part) for part in op_name.split("/")[:-1])


@contextlib.contextmanager
def routed_scope(layers):
    """Within: each method the classes of ``layers`` define (below ``keras.layers.Layer``) runs in the name scope
    :data:`ROUTED_SCOPE`, so every op they make carries it: their forward ops, the gradient ops TensorFlow names after
    those, and a rematerialised layer's recomputation in the backward pass (which calls the same methods)."""
    import tensorflow as tf

    def scoped(method):
        @functools.wraps(method)
        def run(*args, **kwargs):
            with tf.name_scope(ROUTED_SCOPE):
                return method(*args, **kwargs)

        return run

    wrapped = []
    try:
        for layer in layers:
            for cls in type(layer).__mro__:
                if cls is keras.layers.Layer:
                    break
                for name, attribute in vars(cls).items():
                    if inspect.isfunction(attribute) and not name.startswith("__") and (layer, name) not in wrapped:
                        setattr(layer, name, scoped(getattr(layer, name)))
                        wrapped.append((layer, name))
        yield
    finally:
        for layer, name in wrapped:
            delattr(layer, name)
