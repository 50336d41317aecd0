"""White-box L-infinity attacks: FGSM (Goodfellow et al., 2015) and PGD (Madry et al., 2018), as :func:`adversarial_examples`.

Images are in [0, 1] and ``epsilon`` is in those units (0.1 is 25.5 grey levels); every adversarial image
lies inside the epsilon-ball around its image and inside [0, 1]. A model that rescales [0, 255] inputs
itself (built with ``include_preprocessing=True``: a first ``Rescaling(1/255)`` layer) is fed the images
times 255, found from its first layer (or ``input_scale``); the attack still works in [0, 1].

The loss attacked is the model's own training loss where it can be read: the loss a compiled model was
compiled with; ``keras-capsules robustness --attack`` also reads a preset's training recipe (margin loss for
the capsule presets, cross-entropy for the CNN and GLOM) or the recipe in the ``metrics.json`` that
``keras-capsules train`` wrote next to a ``.keras`` file. Else pass ``loss=``. Reconstruction terms are not
attacked (the class scores only). Every result records the loss and where it came from.
"""

import dataclasses
import json
import math
import os

import keras
import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.evaluation import attack_memory
from keras_capsules.ops.compile import compiled_inference

#: The attacks, by name.
ATTACKS = ("fgsm", "pgd")
#: PGD's default step size is ``STEP_SIZE_FACTOR * epsilon / steps`` (Madry et al., 2018).
STEP_SIZE_FACTOR = 2.5
_LOSS_NAMES = ("margin", "cross_entropy")


@dataclasses.dataclass
class AdversarialExamples:
    """What :func:`adversarial_examples` returns.

    Attributes:
        images: float32 ``(N, H, W, C)`` in [0, 1], each within ``epsilon`` (L-infinity) of its image.
        attack, epsilon, steps, step_size, random_start, seed: the attack as run.
        loss: the loss attacked (``"margin"``, ``"cross_entropy (from logits)"``, ...).
        loss_source: where it came from (``"argument"``, ``"compiled model"``, ``"recipe EffCapsNet/mnist/default"``, ...).
        input_scale: the factor the images were multiplied by before the model (1 or 255).
        zero_gradient: fraction of images whose loss gradient was zero at the first step (the attack's
            first step left them where they were: e.g. a margin loss already at 0).
        batch_size: images per gradient call, as given or planned (the images do not depend on it).
    """

    images: np.ndarray
    attack: str
    epsilon: float
    steps: int
    step_size: float
    random_start: bool
    seed: int
    loss: str
    loss_source: str
    input_scale: float
    zero_gradient: float
    batch_size: int


def _open_model(function, model):
    """``(keras model, name, (compiled loss, "compiled model") or None)`` from a model, a ``.keras`` file or a preset name."""
    if isinstance(model, (str, os.PathLike)) and not isinstance(model, bool):
        from keras_capsules import presets

        text = os.fspath(model)
        opened = presets.open_model(text)
        if opened is None:
            raise ValueError(
                f"{function}: argument `model` expected a Keras model, a .keras file or a preset MODEL/NAME "
                f"(one of {', '.join(presets.available())}), received {text!r}."
            )
        return opened[0], "/".join(opened[1]) if opened[1] else os.path.basename(text), None
    if not isinstance(model, keras.Model):
        raise TypeError(
            f"{function}: argument `model` expected a Keras model, a .keras file or a preset name, received {model!r}."
        )
    compiled = getattr(model, "loss", None)
    if isinstance(compiled, (dict, list, tuple)):
        raise ValueError(
            f"{function}: argument `model` expected a model compiled with one loss (or pass `loss=`), received {compiled!r}."
        )
    if compiled is None:
        return model, model.name, None
    return model, model.name, (keras.losses.get(compiled) if isinstance(compiled, str) else compiled, "compiled model")


def _ends_in_softmax(model):
    last = model.layers[-1] if model.layers else None
    return isinstance(last, keras.layers.Softmax) or getattr(last, "activation", None) is keras.activations.softmax


def _named_loss(function, loss, model):
    """The loss object an explicit ``loss=`` names."""
    if callable(loss):
        return loss
    if loss == "margin":
        from keras_capsules.losses import MarginLoss

        return MarginLoss()
    if loss == "cross_entropy":
        from keras_capsules.losses import ScoresCrossentropy

        return ScoresCrossentropy(from_logits=not _ends_in_softmax(model))
    raise ValueError(
        f"{function}: argument `loss` expected None (the model's training loss), one of {list(_LOSS_NAMES)} or a "
        f"callable (y_true, y_pred) -> losses, received {loss!r}."
    )


def describe_loss(loss):
    """A loss object's short name: ``"margin"``, ``"spread (margin 0.2)"``, ``"cross_entropy (from logits)"``, a
    class or function name."""
    from keras_capsules.losses import MarginLoss, ScoresCrossentropy, SpreadLoss

    if isinstance(loss, MarginLoss):
        return "margin"
    if isinstance(loss, SpreadLoss):
        return f"spread (margin {float(keras.ops.convert_to_numpy(loss.margin)):g})"
    if isinstance(loss, ScoresCrossentropy) and loss.log_odds:
        return "cross_entropy (from log-odds)"
    if isinstance(loss, (keras.losses.SparseCategoricalCrossentropy, keras.losses.CategoricalCrossentropy)):
        return f"cross_entropy (from {'logits' if loss.get_config()['from_logits'] else 'probabilities'})"
    if isinstance(loss, keras.losses.Loss):
        return type(loss).__name__
    return getattr(loss, "__name__", repr(loss))


def _resolve_loss(function, model, loss, trained):
    """``(per-example loss function, name, source, one_hot, key)``: ``loss=`` if given, else the training loss
    ``trained``; ``key`` identifies it (:func:`_loss_key`)."""
    if loss is not None:
        chosen, source = _named_loss(function, loss, model), "argument"
    elif trained is not None:
        chosen, source = trained
    else:
        raise ValueError(
            f"{function}: argument `loss` expected one of {list(_LOSS_NAMES)} or a callable for a model whose training "
            "loss cannot be read (not compiled; `keras-capsules robustness --attack` reads a preset's or a trained file's), "
            "received None."
        )
    one_hot = (
        isinstance(chosen, keras.losses.CategoricalCrossentropy) or chosen is keras.losses.categorical_crossentropy
    )
    per_example = chosen.call if isinstance(chosen, keras.losses.Loss) else chosen
    return per_example, describe_loss(chosen), source, one_hot, _loss_key(chosen)


def _loss_key(loss):
    """What identifies a loss for reusing a traced gradient: a Keras loss's class and config, else the callable."""
    if isinstance(loss, keras.losses.Loss):
        return type(loss), json.dumps(loss.get_config(), sort_keys=True, default=str)
    return loss


def input_scale(model):
    """255 for a model whose first layer rescales [0, 255] images (``Rescaling(1/255)``, ``include_preprocessing=True``), else 1."""
    first = next((layer for layer in model.layers if not isinstance(layer, keras.layers.InputLayer)), None)
    if isinstance(first, keras.layers.Rescaling) and np.isclose(first.scale, 1 / 255) and first.offset == 0:
        return 255.0
    return 1.0


def _loss_gradient(function, model, per_example, scale, padding):
    """``(gradient, graph_function)``: ``gradient(images, labels)`` is the gradient of the summed loss with respect to
    ``(N, H, W, C)`` images, as NumPy; ``graph_function`` the same as TensorFlow ops to trace (``None`` on another backend)."""

    def model_input(images):
        if padding is not None:
            images = ops.pad(images, ((0, 0), *padding, (0, 0)))
        return images * scale

    def total(scores, labels):
        return ops.sum(ops.cast(per_example(labels, ops.cast(scores, "float32")), "float32"))

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        def graph_function(images, labels):
            with tf.GradientTape() as tape, compiled_inference():  # routers compile as in training
                tape.watch(images)
                value = total(model(model_input(images), training=False), labels)
            return tape.gradient(value, images)

        gradient = tf.function(graph_function, reduce_retracing=True)
        return lambda images, labels: gradient(tf.constant(images), tf.constant(labels)).numpy(), graph_function
    if backend == "jax":
        import jax

        def value(images, labels, trainable, non_trainable):
            scores, _ = model.stateless_call(trainable, non_trainable, model_input(images), training=False)
            return total(scores, labels)

        gradient = jax.jit(jax.grad(value))
        return lambda images, labels: np.asarray(
            gradient(
                images,
                labels,
                [v.value for v in model.trainable_variables],
                [v.value for v in model.non_trainable_variables],
            )
        ), None
    if backend == "torch":
        import torch

        def gradient(images, labels):
            inputs = ops.convert_to_tensor(images).requires_grad_()  # on the backend's device, as the weights
            value = total(model(model_input(inputs), training=False), ops.convert_to_tensor(labels))
            (grad,) = torch.autograd.grad(value, [inputs])
            return ops.convert_to_numpy(grad)

        return gradient, None
    raise NotImplementedError(
        f"{function}: the Keras backend {backend!r} is not supported; expected 'tensorflow', 'jax' or 'torch'."
    )


def _out_of_memory(error):
    """Whether ``error`` is a backend running out of memory: TensorFlow's ``ResourceExhaustedError``, XLA's
    ``RESOURCE_EXHAUSTED`` (JAX), PyTorch's ``OutOfMemoryError`` (a GPU) or its CPU allocator's ``RuntimeError``."""
    text = str(error)
    return (
        type(error).__name__ in ("ResourceExhaustedError", "OutOfMemoryError")
        or text.startswith("RESOURCE_EXHAUSTED")
        or "DefaultCPUAllocator: can't allocate memory" in text
    )


def _check_arguments(function, attack, epsilons, steps, step_size, random_start, batch_size, seed):
    """``(steps, step_size, random_start, step size factor)`` with the attack's defaults; every argument checked.

    Without ``step_size``, each step is ``factor * epsilon / steps``: ``epsilon`` for FGSM, ``2.5 epsilon / steps`` for PGD.
    """
    if attack not in ATTACKS:
        raise ValueError(f"{function}: argument `attack` expected one of {list(ATTACKS)}, received {attack!r}.")
    for epsilon in epsilons:
        if not errors.is_number(epsilon) or not 0 <= epsilon < float("inf"):
            errors.fail(function, "epsilon", "a non-negative number (in units of the [0, 1] image range)", epsilon)
    if attack == "fgsm":
        if steps not in (None, 1) or step_size is not None:
            raise ValueError(
                f"{function}: FGSM takes one step of size epsilon; arguments `steps` and `step_size` expected None, "
                f"received steps={steps!r}, step_size={step_size!r} (use attack='pgd')."
            )
        steps, random_start, factor = 1, bool(random_start), 1.0
    else:
        steps = 10 if steps is None else steps
        random_start = True if random_start is None else random_start
        factor = STEP_SIZE_FACTOR
    if not errors.is_integer(steps) or steps < 1:
        errors.fail(function, "steps", "a positive integer", steps)
    if step_size is not None and (not errors.is_number(step_size) or not step_size > 0):
        errors.fail(function, "step_size", f"None ({STEP_SIZE_FACTOR} epsilon / steps) or a positive number", step_size)
    if not isinstance(random_start, (bool, np.bool_)):
        errors.fail(function, "random_start", "None or a bool", random_start)
    if batch_size is not None and (not errors.is_integer(batch_size) or batch_size < 1):
        errors.fail(function, "batch_size", "None (planned from memory) or a positive integer", batch_size)
    if not errors.is_integer(seed) or seed < 0:
        errors.fail(function, "seed", "a non-negative integer", seed)
    return int(steps), step_size, bool(random_start), factor


def _check_data(function, model, x, y):
    """``(images float32 (N, H, W, C), labels int (N,), classes)`` after checking both against the model."""
    x = np.asarray(x)
    if x.ndim != 4 or not len(x) or x.dtype.kind not in "fiu":
        errors.fail(function, "x", "a non-empty (N, H, W, C) array of images", f"shape {x.shape}, dtype {x.dtype}")
    x = x.astype("float32")
    if x.min() < 0 or x.max() > 1:
        errors.fail(
            function,
            "x",
            "images scaled to [0, 1] (scale [0, 255] images with keras_capsules.applications.preprocess_input)",
            f"values in [{x.min():g}, {x.max():g}]",
        )
    classes = model.outputs[0].shape[-1] if getattr(model, "outputs", None) else None
    labels = np.asarray(y)
    if labels.shape != (len(x),):
        errors.fail(function, "y", f"class indices of shape ({len(x)},)", f"shape {labels.shape}")
    errors.check_whole_labels(function, "y", labels)
    errors.check_label_range(function, "y", labels, classes)
    return x, labels.astype("int32"), classes


#: The model attribute holding what its attacks traced: ``{(loss key, scale, padding): (gradient, graph function)}``
#: and the memory plans made with them, so that a model attacked again with the same loss (the slices of a test set,
#: an FGSM then a PGD) reuses its traced (and XLA-compiled) gradient instead of tracing and compiling it again. Kept on
#: the model (set past Keras's attribute tracking), it goes when the model goes.
_TRACED = "_keras_capsules_attack_traces"


class _Attack:
    """One attack set up on one model and loss: ``run(images, labels, epsilon, noise)`` per batch."""

    def __init__(self, function, opened, loss, scale, padding, classes, settings, batch_size):
        self.model, self.name, trained = opened
        per_example, self.loss, self.loss_source, self.one_hot, key = _resolve_loss(function, self.model, loss, trained)
        self.scale = input_scale(self.model) if scale is None else float(scale)
        if not hasattr(self.model, _TRACED):
            object.__setattr__(self.model, _TRACED, {})
        self._traced, self._key = getattr(self.model, _TRACED), (key, self.scale, padding)
        if self._key not in self._traced:
            self._traced[self._key] = _loss_gradient(function, self.model, per_example, self.scale, padding)
        self._gradient, self._graph_function = self._traced[self._key]
        self.function, self.batch_size, self.padding, self.classes = function, batch_size, padding, classes
        self.planned = batch_size is None
        self.steps, self.step_size, self.random_start, self.factor = settings

    def estimated_peak_bytes(self, image_shape, batch_size):
        """The memory plan's peak for the gradient on ``batch_size`` images of ``image_shape`` (TensorFlow; traced, not run)."""
        return attack_memory.estimated_peak_bytes(
            self._graph_function, self.model, image_shape, self._target_spec(), batch_size
        )

    def planned_batch_size(self, image_shape, images, limit_bytes=None):
        """The images per gradient call the memory plan gives for ``images`` images of ``image_shape``
        (:func:`~keras_capsules.evaluation.attack_memory.gradient_batch_size`) with the memory available now; its
        traced peak line is kept with the gradient."""
        key = ("peak line", self._key, tuple(image_shape))

        def line():  # traced when the plan needs it, once
            if key not in self._traced:
                self._traced[key] = attack_memory.peak_line(
                    self._graph_function, self.model, image_shape, self._target_spec()
                )
            return self._traced[key]

        return attack_memory.gradient_batch_size(
            self._graph_function, self.model, image_shape, self._target_spec(), images, limit_bytes, line=line
        )

    def plan_batch_size(self, images):
        """Sets ``batch_size`` from the memory plan of the gradient on ``(N, H, W, C)`` images when none was given:
        the planned size evened out over the batches it makes (1,000 images planned at 65: 16 batches of 63)."""
        if self.planned:
            planned = self.planned_batch_size(images.shape[1:], len(images))
            self.batch_size = math.ceil(len(images) / math.ceil(len(images) / planned))

    def _target_spec(self):
        """One target's ``(shape, dtype)``: a one-hot row or a class index."""
        return ((self.classes,), "float32") if self.one_hot else ((), "int32")

    def gradient(self, images, targets):
        """The loss gradient at ``(N, H, W, C)`` images, as NumPy; running out of memory is an error naming ``batch_size``.

        A batch smaller than ``batch_size`` (the last one) is padded to it with copies of its first image, whose
        gradients are dropped: every call has one shape, so TensorFlow traces the gradient once. A second shape
        would trace a graph with an unknown batch size beside the first, and that graph kept more memory per
        image (ConsensusCapsNet with kernel routing at 65 then 63 images: 16.7 GB peak, then 20.3 GB)."""
        count = len(images)
        if count < self.batch_size:
            images, targets = (
                np.concatenate([a, np.repeat(a[:1], self.batch_size - count, axis=0)]) for a in (images, targets)
            )
        try:
            return self._gradient(images, targets)[:count]
        except Exception as error:
            if not _out_of_memory(error):
                raise
            from keras_capsules.datasets.registry import spelled

            raise MemoryError(
                f"{self.function}: out of memory computing the loss gradient of {len(images)} images at once (the "
                f"backward pass keeps every layer's activations of the batch); {spelled('batch_size')} expected fewer "
                f"images per gradient call, received {self.batch_size}"
                + (" (planned from the memory available: pass a smaller one)." if self.planned else ".")
            ) from error

    def step_size_for(self, epsilon):
        return self.factor * epsilon / self.steps if self.step_size is None else float(self.step_size)

    def targets(self, labels):
        return np.eye(self.classes, dtype="float32")[labels] if self.one_hot else labels

    def run(self, images, labels, epsilon, noise=None, first_gradient=None):
        """``(adversarial images, whether each image's first gradient was zero)`` for one batch; ``noise`` in [-1, 1].

        ``first_gradient``: the loss gradient at ``images`` when already computed (without ``noise`` the first step
        starts there whatever ``epsilon``, so several epsilons share it)."""
        targets = self.targets(labels)
        lower, upper = np.maximum(images - epsilon, 0.0), np.minimum(images + epsilon, 1.0)
        adversarial = images if noise is None else np.clip(images + epsilon * noise, lower, upper)
        size = self.step_size_for(epsilon)
        for step in range(self.steps):
            if step == 0 and noise is None and first_gradient is not None:
                gradient = first_gradient
            else:
                gradient = self.gradient(adversarial, targets)
            if step == 0:
                stuck = ~np.any(gradient.reshape(len(images), -1) != 0, axis=1)
            adversarial = np.clip(adversarial + size * np.sign(gradient), lower, upper).astype("float32")
        return adversarial, stuck

    def predict(self, images):
        """Predicted classes ``(N,)`` of ``(N, H, W, C)`` images in [0, 1]."""
        if self.padding is not None:
            images = np.pad(images, ((0, 0), *self.padding, (0, 0)))
        scores = ops.convert_to_numpy(self.model.predict_on_batch(images * self.scale))
        return np.argmax(scores, axis=-1)


def _setup(function, model, x, y, attack, epsilons, steps, step_size, random_start, loss, batch_size, seed, scale):
    from keras_capsules.evaluation.robustness import _padding

    settings = _check_arguments(function, attack, epsilons, steps, step_size, random_start, batch_size, seed)
    if scale is not None and (not errors.is_number(scale) or not scale > 0):
        errors.fail(function, "input_scale", "None (read from the model) or a positive number", scale)
    opened = _open_model(function, model)
    x, labels, classes = _check_data(function, opened[0], x, y)
    padding = _padding(opened[0], x.shape[1:])
    prepared = _Attack(function, opened, loss, scale, padding, classes, settings, batch_size)
    prepared.plan_batch_size(x)
    noise = None
    if prepared.random_start:
        noise = 2 * np.random.default_rng(int(seed)).random(x.shape, dtype="float32") - 1
    return prepared, x, labels, noise


def adversarial_examples(
    model,
    x,
    y,
    attack="fgsm",
    epsilon=0.1,
    steps=None,
    step_size=None,
    random_start=None,
    loss=None,
    batch_size=None,
    seed=0,
    input_scale=None,
):
    """White-box L-infinity adversarial examples: FGSM, or PGD with projected sign-gradient steps.

    Each step moves every pixel by ``step_size`` in the direction of the loss gradient's sign, then
    projects onto the epsilon-ball around ``x`` intersected with [0, 1]. FGSM is one step of size
    ``epsilon``; PGD with ``steps=1, step_size=epsilon, random_start=False`` is FGSM.

    Args:
        model: a Keras model that outputs class scores ``(N, classes)``, a ``.keras`` file, or a preset
            ``"MODEL/NAME"``.
        x: ``(N, H, W, C)`` images in [0, 1]; smaller than the model's input: zero-padded centrally.
        y: ``(N,)`` class indices.
        attack: ``"fgsm"`` or ``"pgd"``.
        epsilon: the L-infinity radius, in units of the [0, 1] image range.
        steps: PGD's steps (default 10); FGSM: 1.
        step_size: PGD's step (default ``2.5 * epsilon / steps``); FGSM: ``epsilon``.
        random_start: start from a uniform draw in the epsilon-ball (default: True for PGD, False for FGSM).
        loss: ``None`` (the model's training loss), ``"margin"``, ``"cross_entropy"`` (sparse; on
            probabilities when the model ends in a softmax, else on its outputs as logits) or a callable
            ``(y_true, y_pred) -> per-example losses``.
        batch_size: images per gradient call. The call keeps the activations of the whole batch for its
            backward pass: about a quarter of a GB per image for ConsensusCapsNet with kernel routing at
            28x28. Default: planned on TensorFlow, the largest batch up to 256 whose estimated peak fits
            in the memory this process can use (:mod:`~keras_capsules.evaluation.attack_memory`), evened
            out over the batches it makes; 256 on JAX and PyTorch. A last, smaller batch is padded to this
            size. Running out of memory raises a ``MemoryError`` naming this argument.
        seed: seed of the random start (the same seed gives the same start, whatever ``batch_size``).
        input_scale: the factor applied to the images before the model (default: 255 for a model whose
            first layer is ``Rescaling(1/255)``, else 1).

    Returns:
        :class:`AdversarialExamples`.
    """
    function = "adversarial_examples"
    prepared, x, labels, noise = _setup(
        function, model, x, y, attack, [epsilon], steps, step_size, random_start, loss, batch_size, seed, input_scale
    )
    size = prepared.batch_size
    batches = [
        prepared.run(
            x[start : start + size],
            labels[start : start + size],
            float(epsilon),
            None if noise is None else noise[start : start + size],
        )
        for start in range(0, len(x), size)
    ]
    return AdversarialExamples(
        images=np.concatenate([images for images, _ in batches]),
        attack=attack,
        epsilon=float(epsilon),
        steps=prepared.steps,
        step_size=prepared.step_size_for(float(epsilon)),
        random_start=prepared.random_start,
        seed=int(seed),
        loss=prepared.loss,
        loss_source=prepared.loss_source,
        input_scale=prepared.scale,
        zero_gradient=float(np.mean(np.concatenate([stuck for _, stuck in batches]))),
        batch_size=size,
    )
