"""Concurrent routing over a stack of capsule layers (Tsai et al., ICLR 2020, Procedure 2; docs/reference/routers.md#concurrent-routing)."""

from collections.abc import Sequence

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import unpack_capsules, unpack_shapes
from keras_capsules.layers.conv_caps import ConvCaps
from keras_capsules.layers.fc_caps import FcCaps
from keras_capsules.serialization import register


@register
class ConcurrentRouting(keras.layers.Layer):
    """Runs a stack of routed capsule layers with inverted dot-product attention's concurrent schedule.

    The stack is ``capsule_layers`` (bottom to top, e.g. ``[ConvCaps, ConvCaps, FcCaps]``) above
    the primary capsules, which are this layer's input and stay fixed. With ``t = iterations``:

    1. one sequential bottom-up pass in which every layer routes uniformly (parents start at zero);
    2. ``t - 1`` **Jacobi** sweeps: in each sweep every layer ``L+1`` is recomputed, in one routing
       step, from **the previous sweep's** ``(P^L, P^{L+1})``; its votes come from the previous
       sweep's ``P^L`` and its agreement from the previous sweep's ``P^{L+1}``.

    This is apple's ``CapsModel.forward`` without ``--sequential_routing``. With
    ``sequential=True`` (the paper's ablation "B", apple's ``--sequential_routing``) each layer
    instead runs its first pass and ``t - 1`` refinements before the next layer starts. The routers'
    own ``iterations`` are not used: ``iterations`` here sets the schedule.

    Cost: a layer's output in a sweep reaches the top output only through the sweeps after it, one
    layer up per sweep, so the final sweep recomputes only the top layer, the one before it the top
    two, and so on (apple's code computes the others and discards them; ``call`` skips them, unless
    it returns every layer's coupling). With ``L`` layers a call makes ``L`` uniform first-pass
    steps, which need only the votes' sums, and ``sum_{k=1}^{t-1} min(k, L)`` steps with full votes:
    one sweep (``L`` steps) per iteration once ``t > L``, fewer before. With
    ``InvertedAttentionCapsNet``'s three layers the first ConvCaps layer forms its full votes, the
    network's largest tensor, only from ``t = 4`` on and the second from ``t = 3``: at ``t = 2`` the
    convolutional capsule layers effectively route uniformly, and a step costs far less than at
    ``t = 3`` or ``4``.

    Every router of the stack must accept initial parent poses (``supports_initial_poses``: the
    ``"inverted_dot_product"`` router) unless ``sequential=True``, in which case a layer whose router
    does not simply runs as a normal layer with its own iterations.

    Inputs: the primary capsules ``(poses, activations)`` (or bare poses), e.g.
    ``(batch, H, W, types, d)``; activations are passed along but inverted dot-product attention
    ignores them.

    Outputs: the top layer's ``(poses, activations)``; with ``return_coupling=True`` also a list with
    every layer's coupling of the final sweep (``ConvCaps`` couplings have positions folded into the
    batch, ``(batch * H_out * W_out, K*K*types, out_caps)``).

    Args:
        capsule_layers: list of :class:`~keras_capsules.layers.ConvCaps` /
            :class:`~keras_capsules.layers.FcCaps` (instances or their Keras serialisation dicts),
            bottom to top.
        iterations: ``t`` (apple's ``num_routing``; its README runs use 2), at least 1.
        sequential: run the per-layer sequential schedule instead (ablation B).

    Example:
        >>> stack = ConcurrentRouting([
        ...     ConvCaps(32, kernel_size=3, strides=2, router="inverted_dot_product", transform="matrix"),
        ...     ConvCaps(32, kernel_size=3, router="inverted_dot_product", transform="matrix"),
        ...     FcCaps(10, router="inverted_dot_product", transform="matrix"),
        ... ], iterations=2)
        >>> class_poses, mass_shares = stack(primary_capsules)     # (batch, 10, 16), (batch, 10)
    """

    def __init__(
        self,
        capsule_layers: Sequence[keras.layers.Layer],
        iterations: int = 2,
        sequential: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if not isinstance(capsule_layers, (list, tuple)) or not capsule_layers:
            errors.fail(self, "capsule_layers", "a non-empty list of ConvCaps/FcCaps layers", capsule_layers)
        capsule_layers = [
            keras.saving.deserialize_keras_object(l) if isinstance(l, dict) else l for l in capsule_layers
        ]
        for i, layer in enumerate(capsule_layers):
            if not isinstance(layer, (ConvCaps, FcCaps)):
                errors.fail(self, f"capsule_layers[{i}]", "a ConvCaps or FcCaps layer", type(layer).__name__, TypeError)
        self.iterations = errors.check_positive_int(self, "iterations", iterations)
        self.sequential = bool(sequential)
        if not self.sequential:
            for i, layer in enumerate(capsule_layers):
                if not getattr(layer.router, "supports_initial_poses", False):
                    errors.fail(
                        self,
                        f"capsule_layers[{i}]",
                        "a layer whose router accepts initial parent poses (router='inverted_dot_product') for concurrent "
                        "routing; use sequential=True for other routers",
                        f"router {type(layer.router).__name__}",
                    )
        self.capsule_layers = list(capsule_layers)

    def build(self, input_shape):
        poses_shape, acts_shape = unpack_shapes(self, input_shape)
        shape = (poses_shape, acts_shape if acts_shape is not None else tuple(poses_shape[:-1]))
        for layer in self.capsule_layers:
            if not layer.built:
                layer.build(shape)
            shape = _output_shapes(layer, shape[0])

    # ---- one layer, one call ---------------------------------------------------------------

    def _run(self, layer, inputs, parents, steps, finalize, training):
        """Routes ``layer`` from ``inputs`` (a capsule pair), starting from ``parents`` poses or uniformly."""
        if not getattr(layer.router, "supports_initial_poses", False):
            poses, acts, coupling = layer(inputs, training=training, return_coupling=True)
            return (poses, acts), coupling
        poses, activations = unpack_capsules(self, inputs)
        routing = dict(training=training, return_coupling=True, initial_poses=parents, steps=steps, finalize=finalize)
        if isinstance(layer, ConvCaps):
            layer.check_input_shape(poses)
            batch = ops.shape(poses)[0]
            out_h, out_w = layer.output_grid
            if parents is not None:
                routing["initial_poses"] = ops.reshape(parents, (-1, layer.num_capsules, layer.out_dim))
            out_poses, out_acts, coupling = layer.route_positions(
                poses, activations, **routing
            )  # votes recomputed in backward
            out_poses = ops.reshape(out_poses, (batch, out_h, out_w, layer.num_capsules, layer.out_dim))
            out_acts = ops.reshape(out_acts, (batch, out_h, out_w, layer.num_capsules))
        else:
            out_poses, out_acts, coupling = layer.route_inputs((poses, activations), **routing)
        return (out_poses, out_acts), coupling

    def _final_pass(self, inputs, training, every_layer=True):
        """The top layer's output and, per layer, ``(inputs, outputs, coupling)`` of the final pass.

        With ``every_layer=False`` a Jacobi sweep skips the layers whose outputs cannot reach the top
        layer's final output (``records`` then holds the computed layers only).
        """
        poses, activations = unpack_capsules(self, inputs)
        base = (poses, activations)
        records = []
        if self.sequential:
            value = base
            for layer in self.capsule_layers:
                out, coupling = self._run(layer, value, None, self.iterations, True, training)
                records.append((value, out, coupling))
                value = out
            return value, records
        values = [base]
        for i, layer in enumerate(self.capsule_layers):  # first pass: sequential, uniform routing
            out, coupling = self._run(layer, values[i], None, 1, self.iterations == 1, training)
            records.append((values[i], out, coupling))
            values.append(out)
        top = len(self.capsule_layers) - 1
        for sweep in range(self.iterations - 1):  # Jacobi sweeps over the previous sweep's values
            remaining = self.iterations - 2 - sweep  # sweeps after this one
            updated, records = [base], []
            for i, layer in enumerate(self.capsule_layers):
                if not every_layer and i + remaining < top:  # reaches at most layer i + remaining: dead
                    updated.append(None)
                    continue
                out, coupling = self._run(layer, values[i], values[i + 1][0], 1, remaining == 0, training)
                records.append((values[i], out, coupling))
                updated.append(out)
            values = updated
        return values[-1], records

    def call(self, inputs, training=None, return_coupling=False):
        top, records = self._final_pass(inputs, training, every_layer=return_coupling)
        if return_coupling:
            return top[0], top[1], [coupling for _, _, coupling in records]
        return top

    def routing_tensors(self, inputs, training=None):
        """Every layer's routing in the final pass, for :func:`keras_capsules.interpret.routing_trace`.

        Returns:
            A list with one dict per layer of the stack (bottom to top): ``"input_poses"`` and
            ``"input_activations"`` (what the layer routed from in the final sweep; activations absent
            when the stack received bare poses), ``"coupling"`` and ``"output_activations"``.
        """
        _, records = self._final_pass(inputs, training)
        return [routing_record(children, out_acts, coupling) for children, (_, out_acts), coupling in records]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "capsule_layers": [keras.saving.serialize_keras_object(layer) for layer in self.capsule_layers],
                "iterations": self.iterations,
                "sequential": self.sequential,
            }
        )
        return config


def routing_record(children, output_activations, coupling):
    """One routed layer's routing as a dict: ``input_poses``, ``input_activations`` (when the
    children ``(poses, activations)`` carry them), ``coupling`` and ``output_activations``."""
    poses, activations = children
    record = {"input_poses": poses, "coupling": coupling, "output_activations": output_activations}
    if activations is not None:
        record["input_activations"] = activations
    return record


def _output_shapes(layer, poses_shape):
    """``(poses_shape, activations_shape)`` of a built ConvCaps/FcCaps."""
    batch = poses_shape[0]
    if isinstance(layer, ConvCaps):
        grid = (batch,) + tuple(layer.output_grid) + (layer.num_capsules,)
        return grid + (layer.out_dim,), grid
    return (batch, layer.num_capsules, layer.out_dim), (batch, layer.num_capsules)
