"""Weight pruning for capsule networks: REM's LOBSTER + validation-guided magnitude threshold, iterative and single-shot magnitude pruning.

Scope (REM, docs/reference/rem.md#pruning; defined in :mod:`keras_capsules.pruning_scope`, its names
importable from here too): the *pruning layers* are convolutions (``Conv*``, ``DepthwiseConv*``,
``SeparableConv*``) and capsule vote transforms (``VectorVotes``, ``MatrixVotes``, i.e. the ``W_ij``
of ``FcCaps``/``ConvCaps``); Dense layers (decoders) and normalisation layers are left alone, as in
REM. Their kernels are the *prunable weights* that magnitude thresholds zero; LOBSTER's shrinkage
also acts on their biases and on the routers' weights (REM shrinks every parameter of its capsule
modules, routing bias included).

Zeros stay zero: a mask constraint on each prunable weight (``variable.constraint``, which every
Keras optimizer applies after its update) multiplies the weight by its mask after every step. The
masks are rebuilt from the exact zeros of the weights (REM takes them from ``p == 0`` at the start of
each epoch), so a pruned model saved to ``.keras`` and loaded again keeps its zeros in the file and,
after :func:`keep_pruned` (or with any pruning callback), through further training.

Backend: the callbacks and :class:`LobsterOptimizer` are TensorFlow-backend, single-device (the
default strategy): LOBSTER needs each step's gradients, taken inside the optimizer update; mask
updates between epochs rely on TensorFlow reading variables by reference in the compiled step.
:func:`sparsity`, :func:`prune_magnitude` and :func:`keep_pruned` run on any backend.
"""

import math

import keras
import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.metrics import sparsity
from keras_capsules.pruning_scope import (  # noqa: F401  (public here too)
    KERNEL_NAMES,
    PRUNING_LAYERS,
    prunable_weights,
    pruning_layers,
    unique_variables,
)
from keras_capsules.routing.base import Router
from keras_capsules.serialization import register


def shrinkable_weights(model, layer_types=None):
    """The variables LOBSTER shrinks: every trainable weight of the pruning layers and of the routers."""
    return unique_variables(
        v
        for types in (layer_types or PRUNING_LAYERS, (Router,))
        for layer in pruning_layers(model, types)
        for v in layer.trainable_weights
    )


class _MaskConstraint(keras.constraints.Constraint):
    """Multiplies a weight by its mask after the variable's own constraint (never serialised)."""

    def __init__(self, mask, previous=None):
        self.mask = mask
        self.previous = previous

    def __call__(self, w):
        if self.previous is not None:
            w = self.previous(w)
        return w * ops.cast(self.mask, w.dtype)


class PruningMasks:
    """Masks that keep pruned weights at exactly zero through training.

    One non-trainable mask variable per weight (1 where the weight is non-zero), installed as that
    weight's constraint, which the optimizer applies after every update. Created by
    :func:`keep_pruned`.

    Args:
        variables: the weights to mask.
    """

    def __init__(self, variables):
        self.variables = list(variables)
        self.masks = []
        for variable in self.variables:
            existing = variable.constraint
            if isinstance(existing, _MaskConstraint):
                self.masks.append(existing.mask)
                continue
            mask = keras.Variable(
                ops.ones(variable.shape, dtype=variable.dtype), trainable=False, name=f"{variable.name}_mask"
            )
            variable.constraint = _MaskConstraint(mask, existing)
            self.masks.append(mask)
        self.refresh()

    def refresh(self):
        """Rebuilds every mask from the weights' current exact zeros."""
        for variable, mask in zip(self.variables, self.masks):
            mask.assign(ops.cast(ops.not_equal(variable, 0), mask.dtype))

    def remove(self):
        """Uninstalls the masks (the weights' own constraints are restored)."""
        for variable in self.variables:
            if isinstance(variable.constraint, _MaskConstraint):
                variable.constraint = variable.constraint.previous


def keep_pruned(model, layer_types=None):
    """Keeps the prunable weights that are exactly zero at zero through any further ``fit``.

    Use it on a pruned model loaded from ``.keras`` before training it again (the pruning callbacks
    call it themselves). The compiled train function is reset so the next ``fit`` applies the masks.

    Returns:
        The :class:`PruningMasks`.
    """
    masks = PruningMasks(prunable_weights(model, layer_types))
    model.train_function = None
    return masks


def _global_threshold_mask(values, fraction):
    """Boolean keep-masks that zero exactly ``round(fraction * total)`` smallest-magnitude entries overall."""
    flat = np.concatenate([np.abs(v).reshape(-1) for v in values])
    count = int(round(fraction * flat.size))
    keep = np.ones(flat.size, dtype=bool)
    if count > 0:
        keep[np.argpartition(flat, count - 1)[:count]] = False
    splits = np.cumsum([v.size for v in values])[:-1]
    return [k.reshape(v.shape) for k, v in zip(np.split(keep, splits), values)]


def prune_magnitude(model, target_sparsity, scope="global", layer_types=None, keep=True):
    """Single-shot magnitude pruning: zeroes the smallest-magnitude prunable weights.

    Args:
        model: the model, pruned in place.
        target_sparsity: fraction in [0, 1) of prunable weights to be zero afterwards (weights
            already zero count towards it).
        scope: ``"global"`` (one threshold over all prunable weights, as REM) or ``"layer"`` (each
            weight tensor reaches ``target_sparsity`` on its own).
        layer_types: layer classes to prune (default :data:`PRUNING_LAYERS`).
        keep: also install :func:`keep_pruned` masks, so the zeros survive further training.

    Returns:
        The :func:`sparsity` report after pruning.
    """
    if not errors.is_number(target_sparsity) or not 0 <= target_sparsity < 1:
        errors.fail("pruning.prune_magnitude", "target_sparsity", "a number in [0, 1)", target_sparsity)
    errors.check_one_of("pruning.prune_magnitude", "scope", scope, ("global", "layer"))
    variables = prunable_weights(model, layer_types)
    values = [np.asarray(ops.convert_to_numpy(v)) for v in variables]
    if scope == "global":
        keeps = _global_threshold_mask(values, target_sparsity)
    else:
        keeps = [_global_threshold_mask([v], target_sparsity)[0] for v in values]
    for variable, value, keep_mask in zip(variables, values, keeps):
        variable.assign(np.where(keep_mask, value, 0).astype(value.dtype))
    if keep:
        keep_pruned(model, layer_types)
    return sparsity(model, layer_types)


def validation_loss(model, validation_data, batch_size=None):
    """The model's compiled loss on ``validation_data`` (a dataset or an ``(x, y)`` tuple)."""
    if isinstance(validation_data, (tuple, list)):
        results = model.evaluate(
            validation_data[0], validation_data[1], batch_size=batch_size, verbose=0, return_dict=True
        )
    else:
        results = model.evaluate(validation_data, verbose=0, return_dict=True)
    return float(results["loss"])


def search_magnitude_threshold(model, validation_data, variables, tolerance=0.0, max_steps=None, batch_size=None):
    """REM's global magnitude-threshold search by bisection (docs/reference/rem.md#pruning), then applies it.

    Starts at the mean magnitude within ``[min, max]`` of all ``|w|``; a threshold ``T`` is accepted
    when the validation loss with ``|w| < T`` zeroed is at most ``(1 + tolerance)`` times the unpruned
    loss; the range halves towards larger ``T`` after an accepted one and towards smaller ``T``
    otherwise. Stops when ``T`` moves by less than 1e-10, after 10 identical losses in a row, or
    after ``max_steps`` evaluations (``None``: no limit, as REM); the last accepted ``T`` (0 if none)
    is then applied permanently.

    Returns:
        ``(threshold, base_loss, steps)`` where ``steps`` lists ``(T, loss, accepted)``.
    """
    base_loss = validation_loss(model, validation_data, batch_size)
    boundary = base_loss * (1.0 + tolerance)
    originals = [np.asarray(ops.convert_to_numpy(v)) for v in variables]
    magnitudes = np.concatenate([np.abs(v).reshape(-1) for v in originals])
    high, middle, low = float(magnitudes.max()), float(magnitudes.mean()), float(magnitudes.min())
    accepted_threshold, previous_middle, previous_loss, same, steps = 0.0, math.inf, math.inf, 0, []

    def threshold_weights(threshold):
        for variable, value in zip(variables, originals):
            variable.assign(np.where(np.abs(value) < threshold, 0, value).astype(value.dtype))

    while True:
        threshold_weights(middle)
        loss = validation_loss(model, validation_data, batch_size)
        accepted = loss <= boundary
        steps.append((middle, loss, accepted))
        if accepted:
            accepted_threshold = middle
        if boundary < loss:
            high, middle, low = middle, (middle + low) / 2, low
        else:
            high, middle, low = high, (high + middle) / 2, middle
        same = same + 1 if loss == previous_loss else 0
        if abs(previous_middle - middle) < 1e-10 or same == 10 or (max_steps is not None and len(steps) >= max_steps):
            break
        previous_middle, previous_loss = middle, loss
    threshold_weights(accepted_threshold)
    return accepted_threshold, base_loss, steps


@register
class LobsterOptimizer(keras.optimizers.Optimizer):
    """Wraps an optimizer with LOBSTER's sensitivity-based shrinkage (Tartaglione et al. 2022, used by REM).

    Before each update of the inner optimizer, every selected variable ``p`` with gradient ``g`` is
    shrunk: ``p <- p - strength * p * relu(1 - |g|)``; parameters the loss is insensitive to decay
    towards zero. TensorFlow backend, default strategy. :class:`LobsterPruning` installs it for the
    duration of ``fit``; it can also be passed to ``compile`` directly.

    Args:
        inner_optimizer: the optimizer doing the actual update (an instance, name or config).
        strength: the shrinkage ``lambda`` (REM: 1e-4, decayed by 0.99 per epoch by the callback);
            held in a variable, so it can change without retracing.
        variable_paths: paths (``variable.path``) of the variables to shrink; ``None`` shrinks all.
        name: optimizer name.
    """

    def __init__(self, inner_optimizer, strength=1e-4, variable_paths=None, name=None):
        super().__init__(learning_rate=0.0, name=name)
        self.inner_optimizer = keras.optimizers.get(inner_optimizer)
        if not errors.is_number(strength) or strength < 0:
            errors.fail(self, "strength", "a number >= 0", strength)
        self.initial_strength = float(strength)
        self.variable_paths = None if variable_paths is None else tuple(variable_paths)
        self.strength = None

    def build(self, var_list):
        if not self.inner_optimizer.built:
            self.inner_optimizer.build(var_list)
        self.strength = self.add_variable(
            shape=(), initializer=keras.initializers.Constant(self.initial_strength), name="strength"
        )
        super().build(var_list)

    @property
    def variables(self):
        return self._variables + self.inner_optimizer.variables

    def apply(self, grads, trainable_variables=None):
        if not self.built:
            self.build(list(trainable_variables))
        targets = self._trainable_variables if trainable_variables is None else list(trainable_variables)
        paths = None if self.variable_paths is None else set(self.variable_paths)
        for grad, variable in zip(grads, targets):
            if grad is None or (paths is not None and variable.path not in paths):
                continue
            insensitivity = ops.relu(1.0 - ops.abs(ops.cast(grad, variable.dtype)))
            variable.assign(variable - ops.cast(self.strength, variable.dtype) * variable * insensitivity)
        self.inner_optimizer.apply(grads, trainable_variables)

    @property
    def learning_rate(self):
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate):
        self.inner_optimizer.learning_rate = learning_rate

    @property
    def iterations(self):
        return self.inner_optimizer.iterations

    def scale_loss(self, loss):
        return self.inner_optimizer.scale_loss(loss)

    def finalize_variable_values(self, var_list):
        self.inner_optimizer.finalize_variable_values(var_list)

    def get_config(self):
        return {
            "name": self.name,
            "inner_optimizer": keras.saving.serialize_keras_object(self.inner_optimizer),
            "strength": self.initial_strength,
            "variable_paths": None if self.variable_paths is None else list(self.variable_paths),
        }

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["inner_optimizer"] = keras.saving.deserialize_keras_object(
            config["inner_optimizer"], custom_objects=custom_objects
        )
        return cls(**config)


def _require_tensorflow(owner, model, single_device=False):
    if keras.backend.backend() != "tensorflow":
        errors.fail(
            owner,
            "backend",
            "the TensorFlow backend (masks and shrinkage act inside the compiled TF step)",
            keras.backend.backend(),
            RuntimeError,
        )
    replicas = model.distribute_strategy.num_replicas_in_sync
    if single_device and replicas > 1:
        errors.fail(
            owner,
            "model",
            "a model trained under the default strategy (LOBSTER's per-step shrinkage is single-device)",
            f"{replicas} replicas",
            RuntimeError,
        )


class LobsterPruning(keras.callbacks.Callback):
    """REM's pruning as implemented (docs/reference/rem.md#pruning): LOBSTER every step, a validated global threshold every epoch.

    - Every step: :class:`LobsterOptimizer` shrinkage with ``lambda_e = max(strength * decay**e,
      min_strength)`` during epoch ``e`` on the :func:`shrinkable_weights`.
    - Start of every epoch: the masks are rebuilt from the exact zeros.
    - End of every ``threshold_every``-th epoch from ``start_epoch``: :func:`search_magnitude_threshold`
      on ``validation_data`` (the largest global threshold found by bisection whose pruning does not
      raise the validation loss, ``tolerance`` 0), applied permanently.

    The amount pruned is decided by the validation loss, not by a target rate. The per-epoch results
    are in :attr:`history` (``epoch, strength, threshold, base_val_loss, search_steps, sparsity``)
    and, per weight, in :func:`sparsity`. TensorFlow backend, default strategy.

    Args:
        validation_data: a ``tf.data.Dataset`` of ``(x, y)`` or an ``(x, y)`` tuple (REM holds out
            5,500 training images).
        strength: initial LOBSTER ``lambda`` (REM: 1e-4).
        decay: per-epoch factor of ``lambda`` (REM: 0.99).
        min_strength: floor of ``lambda`` (REM: 0).
        threshold_every: epochs between threshold searches (REM: 1).
        start_epoch: first epoch with a threshold search.
        tolerance: relative validation-loss increase allowed (REM's ``twt``: 0).
        max_search_steps: cap on the bisection's validation evaluations (``None``: REM's stopping rules only).
        batch_size: batch size for tuple ``validation_data``.
        layer_types: pruning-layer classes (default :data:`PRUNING_LAYERS`).
        verbose: print one line per threshold search.
    """

    def __init__(
        self,
        validation_data,
        strength=1e-4,
        decay=0.99,
        min_strength=0.0,
        threshold_every=1,
        start_epoch=0,
        tolerance=0.0,
        max_search_steps=None,
        batch_size=None,
        layer_types=None,
        verbose=0,
    ):
        super().__init__()
        self.validation_data = validation_data
        self.strength = float(strength)
        self.decay = float(decay)
        self.min_strength = float(min_strength)
        self.threshold_every = errors.check_positive_int(self, "threshold_every", threshold_every)
        self.start_epoch = start_epoch
        self.tolerance = float(tolerance)
        self.max_search_steps = max_search_steps
        self.batch_size = batch_size
        self.layer_types = layer_types
        self.verbose = verbose
        self.history = []
        self.masks = None
        self._wrapper = None
        self._installed = False

    def on_train_begin(self, logs=None):
        _require_tensorflow(self, self.model, single_device=True)
        self.masks = keep_pruned(self.model, self.layer_types)
        optimizer = self.model.optimizer
        if isinstance(optimizer, LobsterOptimizer):
            self._wrapper, self._installed = optimizer, False
        else:
            paths = [v.path for v in shrinkable_weights(self.model, self.layer_types)]
            self._wrapper, self._installed = LobsterOptimizer(optimizer, self.strength, paths), True
            self._wrapper.build(self.model.trainable_variables)
            self.model.optimizer = self._wrapper
        self.model.make_train_function(force=True)

    def on_epoch_begin(self, epoch, logs=None):
        self._wrapper.strength.assign(max(self.strength * self.decay**epoch, self.min_strength))
        self.masks.refresh()

    def on_epoch_end(self, epoch, logs=None):
        if epoch < self.start_epoch or (epoch - self.start_epoch) % self.threshold_every:
            return
        threshold, base_loss, steps = search_magnitude_threshold(
            self.model,
            self.validation_data,
            self.masks.variables,
            tolerance=self.tolerance,
            max_steps=self.max_search_steps,
            batch_size=self.batch_size,
        )
        self.masks.refresh()
        report = sparsity(self.model, self.layer_types)
        entry = {
            "epoch": epoch,
            "strength": float(ops.convert_to_numpy(self._wrapper.strength)),
            "threshold": threshold,
            "base_val_loss": base_loss,
            "search_steps": len(steps),
            "sparsity": report["sparsity"],
        }
        self.history.append(entry)
        if logs is not None:
            logs["sparsity"] = report["sparsity"]
        if self.verbose:
            print(
                f"LobsterPruning epoch {epoch + 1}: threshold {threshold:.3g} after {len(steps)} evaluations, "
                f"val loss {base_loss:.4f}, sparsity {report['sparsity']:.2%}"
            )

    def on_train_end(self, logs=None):
        if self._installed:
            self.model.optimizer = self._wrapper.inner_optimizer
            self.model.train_function = None


class MagnitudePruning(keras.callbacks.Callback):
    """Iterative magnitude pruning with a polynomial schedule (Zhu & Gupta 2017), at epoch ends.

    At the end of epoch ``e`` in ``[start_epoch, end_epoch]`` (every ``frequency`` epochs, and always
    at ``end_epoch``), the prunable weights are pruned by magnitude to
    ``s_e = s_f + (s_i - s_f) * (1 - (e - start) / (end - start))**power``, reaching
    ``target_sparsity`` at ``end_epoch``. Masks keep the zeros through training. TensorFlow backend.

    Args:
        target_sparsity: final fraction ``s_f`` of zero prunable weights.
        initial_sparsity: ``s_i`` at ``start_epoch``.
        start_epoch: first pruning epoch (0-based).
        end_epoch: last pruning epoch; ``None`` is the last epoch of ``fit``.
        frequency: epochs between pruning steps.
        power: schedule exponent (3; 1 is linear).
        scope: ``"global"`` or ``"layer"`` (see :func:`prune_magnitude`).
        layer_types: pruning-layer classes (default :data:`PRUNING_LAYERS`).
    """

    def __init__(
        self,
        target_sparsity,
        initial_sparsity=0.0,
        start_epoch=0,
        end_epoch=None,
        frequency=1,
        power=3,
        scope="global",
        layer_types=None,
    ):
        super().__init__()
        for argument, value in (("target_sparsity", target_sparsity), ("initial_sparsity", initial_sparsity)):
            if not errors.is_number(value) or not 0 <= value < 1:
                errors.fail(self, argument, "a number in [0, 1)", value)
        self.target_sparsity = float(target_sparsity)
        self.initial_sparsity = float(initial_sparsity)
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.frequency = errors.check_positive_int(self, "frequency", frequency)
        self.power = power
        self.scope = errors.check_one_of(self, "scope", scope, ("global", "layer"))
        self.layer_types = layer_types
        self.history = []
        self.masks = None

    def schedule(self, epoch, end_epoch):
        """Target sparsity after epoch ``epoch``."""
        if end_epoch <= self.start_epoch:
            return self.target_sparsity
        progress = min(max((epoch - self.start_epoch) / (end_epoch - self.start_epoch), 0.0), 1.0)
        return self.target_sparsity + (self.initial_sparsity - self.target_sparsity) * (1.0 - progress) ** self.power

    def on_train_begin(self, logs=None):
        _require_tensorflow(self, self.model)
        self.masks = keep_pruned(self.model, self.layer_types)
        self.model.make_train_function(force=True)

    def on_epoch_end(self, epoch, logs=None):
        end = self.end_epoch if self.end_epoch is not None else self.params["epochs"] - 1
        due = epoch == end or (epoch - self.start_epoch) % self.frequency == 0
        if not self.start_epoch <= epoch <= end or not due:
            return
        target = self.schedule(epoch, end)
        report = prune_magnitude(self.model, target, self.scope, self.layer_types, keep=False)
        self.masks.refresh()
        self.history.append({"epoch": epoch, "target": target, "sparsity": report["sparsity"]})
        if logs is not None:
            logs["sparsity"] = report["sparsity"]
