"""Coupling access: every routing layer's coupling coefficients and inputs for a batch, from any built model.

``routing_trace(model, images)`` is the one call. It works on a model built by an application
constructor or loaded from ``.keras`` with no rebuilding by hand: it walks the model's functional
graph, finds every routed capsule layer (:class:`~keras_capsules.layers.FcCaps`,
:class:`~keras_capsules.layers.ConvCaps`, the layers inside a
:class:`~keras_capsules.layers.ConcurrentRouting` stack, and any other layer with a ``router`` that takes
``return_coupling``, as SR-CapsNet's class layer) and builds a *probe* model whose outputs
include each of those layers called again with ``return_coupling=True`` on the same symbolic inputs
(for a stack: its final sweep, through ``ConcurrentRouting.routing_tensors``). The probe shares
every weight with the model (it is the same layer objects) and adds nothing to the model's own
graph or its saved config.

:func:`set_quantization` / :func:`quantization` switch REM's quantiser ``q_K`` on for every router of
a trained model (docs/reference/rem.md#quantiser).
"""

import contextlib
import dataclasses

import keras
import numpy as np

from keras_capsules import errors
from keras_capsules.introspection import all_layers
from keras_capsules.layers.capsule_tensor import unpack_capsules
from keras_capsules.layers.concurrent_routing import ConcurrentRouting, routing_record
from keras_capsules.layers.conv_caps import ConvCaps
from keras_capsules.layers.routed_capsules import RoutedCapsules
from keras_capsules.routing.base import Router


def _to_numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


def routing_graph(model):
    """The functional model that holds the routing layers: ``model`` itself (every application is one).

    Raises:
        TypeError: when ``model`` is not a functional model.
    """
    if isinstance(model, keras.Model) and hasattr(model, "operations") and model.inputs:
        return model
    errors.fail(
        "interpret.routing_graph",
        "model",
        "a functional Keras model (an application)",
        type(model).__name__,
        TypeError,
    )


def routed_layer_calls(model):
    """``[(layer, inputs), ...]`` for every routed capsule layer or ``ConcurrentRouting`` stack of the graph, inputs first.

    ``inputs`` are the symbolic inputs of the layer's first call (``layer.input``: a tensor, or a list
    for ``(poses, activations)``).
    """
    graph = routing_graph(model)
    found = [(layer, layer.input) for layer in graph.operations if _is_routed(layer)]
    if not found:
        errors.fail(
            "interpret.routed_layer_calls",
            "model",
            "a model with at least one routed capsule layer (FcCaps, ConvCaps, ConcurrentRouting)",
            model.name,
        )
    return found


def _is_routed(layer):
    """Capsule layers with a router (FcCaps, ConvCaps, SR-CapsNet's class layer) and ``ConcurrentRouting`` stacks."""
    return isinstance(layer, (RoutedCapsules, ConcurrentRouting)) or isinstance(getattr(layer, "router", None), Router)


def _capsule_layers(layer):
    """The routed capsule layers a graph node runs: the layer itself, or a stack's layers bottom to top."""
    return layer.capsule_layers if isinstance(layer, ConcurrentRouting) else [layer]


def _routed_layers(model):
    """The routed capsule layers in graph order, a stack's layers bottom to top, each once."""
    layers = []
    for layer, _ in routed_layer_calls(model):
        layers.extend(routed for routed in _capsule_layers(layer) if routed not in layers)
    return layers


def routing_layer_names(model):
    """Names of the routed capsule layers, in graph order (inputs first)."""
    return [layer.name for layer in _routed_layers(model)]


def routed_layer(model, name):
    """The routed capsule layer ``name`` of ``model`` (a stack's layers included)."""
    layers = _routed_layers(model)
    for layer in layers:
        if layer.name == name:
            return layer
    errors.fail("interpret.routed_layer", "name", f"one of the routed layers {[layer.name for layer in layers]}", name)


class _CouplingTap(keras.layers.Layer):
    """Calls a built routed layer with ``return_coupling=True``, or a stack's ``routing_tensors`` (same weights).

    A separate layer object, because a Keras functional graph takes each layer's output arity from
    its first call, so the routed layer itself cannot be called again with three outputs. Never saved.
    """

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        self.layer = layer
        self.built = True

    def call(self, inputs, training=None):
        if isinstance(self.layer, ConcurrentRouting):
            return self.layer.routing_tensors(inputs, training=training)
        _, out_acts, coupling = self.layer(inputs, training=training, return_coupling=True)
        return [routing_record(unpack_capsules(self.layer, inputs), out_acts, coupling)]


def routing_probe(model, layers=None):
    """A functional model sharing ``model``'s weights that returns scores and routing tensors.

    Outputs (a dict): ``"scores"`` (the model's first output, ``(batch, classes)``), and for each
    selected routed layer ``L``: ``"L:coupling"`` (the layer's coupling, see :class:`LayerRouting`),
    ``"L:input_poses"``, ``"L:input_activations"`` (when the layer receives activations) and
    ``"L:output_activations"``.

    Args:
        model: an application model or a model loaded from ``.keras``.
        layers: names of the routed layers to include (default: all).
    """
    graph = routing_graph(model)
    names = routing_layer_names(model)
    wanted = names if layers is None else list(layers)
    unknown = [name for name in wanted if name not in names]
    if unknown:
        errors.fail("interpret.routing_probe", "layers", f"names among the routed layers {names}", unknown)
    outputs = {"scores": graph.outputs[0]}
    pending = set(wanted)  # a layer called more than once is traced at its first call
    for layer, inputs in routed_layer_calls(model):
        routed = _capsule_layers(layer)
        if pending.isdisjoint(r.name for r in routed):
            continue
        records = _CouplingTap(layer, name=f"{layer.name}_coupling_tap")(inputs)
        for routed_layer, record in zip(routed, records):
            if routed_layer.name in pending:
                pending.discard(routed_layer.name)
                outputs.update({f"{routed_layer.name}:{key}": value for key, value in record.items()})
    return keras.Model(graph.input, outputs, name=f"{model.name}_routing_probe")


@dataclasses.dataclass
class LayerRouting:
    """Routing tensors of one routed capsule layer for a batch (NumPy arrays).

    Attributes:
        name: layer name.
        layer_type: ``"FcCaps"`` (fully connected: FcCaps, SR-CapsNet's class layer) or ``"ConvCaps"``.
        coupling: the layer's coupling, in its native layout: FcCaps ``(batch, in_caps, out_caps)``
            with children flattened in (row, column, type) order for grid inputs; ConvCaps
            ``(batch * H_out * W_out, K*K*in_types, out_types)`` with children in (kernel row,
            kernel column, type) order.
        input_poses: the child poses as the layer received them, ``(batch, [H, W,] types, dim)``.
        input_activations: the child activations, same shape without ``dim``; the pose lengths
            where the layer received bare poses.
        output_activations: ``(batch, [H_out, W_out,] out_caps)``.
        coupling_sums_over: ``"parents"`` or ``"children"``, the axis the layer's router normalises its
            coupling over (:attr:`~keras_capsules.routing.Router.coupling_sums_over`).
    """

    name: str
    layer_type: str
    coupling: np.ndarray
    input_poses: np.ndarray
    input_activations: np.ndarray
    output_activations: np.ndarray
    coupling_sums_over: str = "parents"

    @property
    def grid_input(self):
        """Whether the children form a grid ``(H, W, types)`` (primary or convolutional capsules)."""
        return self.input_poses.ndim == 5

    def class_coupling(self):
        """FcCaps coupling in the children's layout: ``(batch, [H, W,] types, out_caps)``."""
        if self.layer_type != "FcCaps":
            errors.fail(
                "LayerRouting.class_coupling",
                "layer",
                "an FcCaps layer (parents are classes)",
                f"{self.layer_type} '{self.name}'",
            )
        return self.coupling.reshape(self.input_poses.shape[:-1] + (self.coupling.shape[-1],))


@dataclasses.dataclass
class RoutingTrace:
    """Scores and per-layer routing tensors of a batch, as returned by :func:`routing_trace`.

    Attributes:
        scores: ``(batch, classes)`` model scores.
        layers: :class:`LayerRouting` of every routed layer, inputs first.
    """

    scores: np.ndarray
    layers: list

    @property
    def predictions(self):
        """Predicted class per example (arg-max of the scores), ``(batch,)`` int."""
        return np.argmax(self.scores, axis=-1)

    @property
    def last(self):
        """The last routing layer (the class layer of a classifier)."""
        return self.layers[-1]

    def __getitem__(self, name):
        for record in self.layers:
            if record.name == name:
                return record
        errors.fail("RoutingTrace", "name", f"one of {[r.name for r in self.layers]}", name, KeyError)


def _layer_type(layer):
    """``"ConvCaps"``, or ``"FcCaps"`` for a fully connected routed layer (SR-CapsNet's class layer too)."""
    return "ConvCaps" if isinstance(layer, ConvCaps) else "FcCaps"


def trace_from_outputs(model, outputs):
    """Turns a probe's output dict (tensors or arrays) into a :class:`RoutingTrace`."""
    layers = []
    for layer in _routed_layers(model):
        key = f"{layer.name}:coupling"
        if key not in outputs:
            continue
        poses = _to_numpy(outputs[f"{layer.name}:input_poses"])
        acts = outputs.get(f"{layer.name}:input_activations")
        acts = np.sqrt(np.sum(np.square(poses), axis=-1)) if acts is None else _to_numpy(acts)
        layers.append(
            LayerRouting(
                name=layer.name,
                layer_type=_layer_type(layer),
                coupling=_to_numpy(outputs[key]),
                input_poses=poses,
                input_activations=acts,
                output_activations=_to_numpy(outputs[f"{layer.name}:output_activations"]),
                coupling_sums_over=layer.router.coupling_sums_over,
            )
        )
    return RoutingTrace(scores=_to_numpy(outputs["scores"]), layers=layers)


def routing_trace(model, images, layers=None):
    """Coupling coefficients and child activations of every routing layer for one batch.

    Runs at inference (``training=False``), so routers with ``quantize_levels`` report the
    quantised coupling ``q_K(c)`` of their last iteration.

    Args:
        model: an application model (functional, or a ``CapsuleClassifier``), also one loaded from ``.keras``.
        images: a batch ``(batch, H, W, C)`` (array or tensor).
        layers: optional names of the routed layers to include (default: all).

    Returns:
        A :class:`RoutingTrace`: ``scores``, ``predictions`` and one :class:`LayerRouting` per layer.

    Example:
        >>> trace = routing_trace(model, images)
        >>> trace.last.coupling.shape          # CapsNet: (batch, 1152, 10)
    """
    check_images("interpret.routing_trace", model, images)
    probe = routing_probe(model, layers)
    return trace_from_outputs(model, probe(images, training=False))


def fits_input(model, image_shape):
    """Whether images of shape ``image_shape`` (``(H, W, C)``) fit ``model``'s input (a ``None`` size takes any).

    Grey images without their channel axis fit a one-channel input, as Keras adds the axis.
    """
    expected = tuple(routing_graph(model).inputs[0].shape[1:])
    if len(image_shape) == len(expected) - 1 and expected[-1] == 1:
        image_shape = tuple(image_shape) + (1,)
    return len(expected) == len(image_shape) and all(e is None or e == r for e, r in zip(expected, image_shape))


def check_images(owner, model, images):
    """Raises a ``ValueError`` naming ``owner`` when ``images`` ``(batch, H, W, C)`` do not fit ``model``'s input."""
    graph = routing_graph(model)  # a model that is not functional is named first
    if not fits_input(graph, tuple(images.shape[1:])):
        shape = ", ".join(str(size) for size in graph.inputs[0].shape[1:])
        errors.fail(owner, "images", f"a batch of shape (batch, {shape}), the model's input", tuple(images.shape))


def routers(model):
    """Every :class:`~keras_capsules.routing.Router` inside ``model`` (nested layers included)."""
    return [layer for layer in all_layers(model) if isinstance(layer, Router)]


def _reset_compiled_functions(model):
    if isinstance(model, keras.Model):
        model.predict_function = None
        model.test_function = None
        model.train_function = None


def set_quantization(model, levels):
    """Sets REM's quantiser ``q_K`` (``quantize_levels``) on every router of ``model``, in place.

    At inference each router then snaps the coupling of its last iteration to the ``levels`` centres
    ``k/(levels-1)`` before it weights the votes (docs/reference/rem.md#quantiser); training is unaffected. The
    setting is part of the routers' config, so a model saved afterwards keeps it. Compiled
    predict/evaluate/train functions are reset so the next call retraces with the new setting.

    Args:
        model: any Keras model containing routers.
        levels: ``K >= 2``, or ``None`` to switch quantisation off.

    Returns:
        The previous ``quantize_levels`` of each router, in :func:`routers` order.
    """
    if levels is not None:
        errors.check_positive_int("interpret.set_quantization", "levels", levels, minimum=2)
    found = routers(model)
    if not found:
        errors.fail("interpret.set_quantization", "model", "a model with at least one router", model.name)
    previous = [router.quantize_levels for router in found]
    for router in found:
        router.quantize_levels = levels
    _reset_compiled_functions(model)
    return previous


@contextlib.contextmanager
def quantization(model, levels):
    """Context manager: :func:`set_quantization` inside the block, the previous settings restored after."""
    found = routers(model)
    previous = set_quantization(model, levels)
    try:
        yield model
    finally:
        for router, value in zip(found, previous):
            router.quantize_levels = value
        _reset_compiled_functions(model)
