"""``CapsuleClassifier``: the functional model every application returns, with an optional label-masked reconstruction decoder that trains with plain ``fit``."""

import contextlib
import inspect
import json
import sys
import textwrap

import keras
import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.heads import Mask
from keras_capsules.losses import reconstruction_loss
from keras_capsules.presets.class_names import check_class_names, output_units
from keras_capsules.serialization import register


@register
class ReconstructionLoss(keras.losses.Loss):
    """``weight * squared reconstruction error`` per example (``"sum"`` over pixels: Sabour; ``"mean"``: EscVM).

    ``y_true`` are images, ``y_pred`` reconstructions, both ``(batch, *image_shape)``.
    """

    def __init__(
        self,
        weight: float = 0.0005,
        pixel_reduction: str = "sum",
        name: str = "reconstruction_loss",
        **kwargs,
    ) -> None:
        super().__init__(name=name, **kwargs)
        self.weight = float(weight)
        self.pixel_reduction = pixel_reduction

    def call(self, y_true, y_pred):
        return self.weight * reconstruction_loss(y_true, y_pred, self.pixel_reduction)

    def get_config(self):
        config = super().get_config()
        config.update({"weight": self.weight, "pixel_reduction": self.pixel_reduction})
        return config


class _BatchCounter(keras.callbacks.Callback):
    """Counts the batches a ``predict``/``evaluate`` call runs (none: the data held zero examples).

    Counts at batch end: Keras calls ``on_*_batch_begin`` once before it finds the data empty.
    """

    async_safe = True  # keeps Keras's asynchronous callback dispatch on

    def __init__(self):
        super().__init__()
        self.batches = 0

    def on_test_batch_end(self, batch, logs=None):
        self.batches += 1

    def on_predict_batch_end(self, batch, logs=None):
        self.batches += 1


def _with_counter(callbacks):
    """``(counter, callbacks)``: a :class:`_BatchCounter` added to a list of callbacks (``None``: none).

    A ``CallbackList`` (what ``fit`` passes to its validation ``evaluate``) is left alone: counter ``None``.
    """
    if isinstance(callbacks, keras.callbacks.CallbackList):
        return None, callbacks
    counter = _BatchCounter()
    return counter, [*(keras.tree.flatten(callbacks) if callbacks else []), counter]


_FIT = inspect.signature(keras.Model.fit)
_EVALUATE = inspect.signature(keras.Model.evaluate)


@register
class CapsuleClassifier(keras.Model):
    """The model every application constructor returns: a functional model, with an optional reconstruction decoder.

    It is a functional ``keras.Model`` (``model.layers``, ``get_layer``, ``inputs``/``outputs`` and
    ``keras.Model(model.inputs, ...)`` work as for any Keras Application), built from
    ``inputs`` and ``outputs``: the class scores (output layer ``"predictions"``) or, for
    ``include_top=False``, the features. ``model(x)`` / ``predict`` return those outputs.

    With a ``decoder``, the label-masked reconstruction regulariser lives in the loss, so
    ``fit(images, labels)`` works: in training (``model(x, training=True)``) the model returns
    ``(scores, class_poses)`` (the poses are the first output of layer ``class_capsules``) and
    :meth:`compute_loss` adds ``reconstruction_weight * error(x, decoder(mask(class_poses, y)))`` to
    the compiled loss (the decoder sees the true class only, as in the papers). :meth:`reconstruct`
    gives reconstructions at inference. Validation losses from ``evaluate`` are the compiled loss
    only. The decoder is listed in ``model.layers`` (after the graph's layers) and in ``summary()``.

    Bad input: ``predict`` on zero examples returns empty outputs (``(0, classes)`` scores) and
    ``evaluate`` on zero examples raises a ``ValueError`` (there is no mean over no examples).
    ``fit``/``evaluate`` refuse class-index labels ``(N,)``/``(N, 1)`` that are not whole numbers
    (2.7 would be truncated to class 2 in silence; 2.0 is accepted) or lie outside ``0..classes-1``,
    ``classes`` being the model's output size (10..17 or -1 for 10 classes: margin, spread and
    reconstruction losses read them as no class and train to a NaN loss), where the values are
    visible: NumPy arrays, lists and eager tensors. One-hot and multi-hot targets ``(N, classes)``
    are not class indices and pass unchecked. Labels inside a ``tf.data`` pipeline (a compiled
    ``fit(dataset)``) are not visible before the graph is traced, so they are not checked:
    ``keras_capsules.datasets`` checks the labels it reads from files, and
    ``datasets.from_arrays(..., classes=...)`` those given to it.

    Args:
        inputs, outputs: as for a functional ``keras.Model``.
        decoder: ``None`` or a layer mapping ``(batch, classes * capsule_dim)`` to images shaped like the input.
        class_capsules: name of the layer whose first output is the class poses
            ``(batch, classes, capsule_dim)`` that the decoder reads.
        reconstruction_weight: weight of the reconstruction term (0.0005 with ``"sum"``; 0.392 with ``"mean"``).
        pixel_reduction: ``"sum"`` or ``"mean"`` over pixels.
        mask_top_k: capsules kept by :meth:`reconstruct` without labels (2 for MultiMNIST).
        class_names: ``None`` or one name per class, in output order (see :attr:`class_names`).
        constructor: ``None`` or the application constructor and arguments that rebuild this
            architecture (see :attr:`constructor`; the application builder sets it).
        name: model name.
    """

    def __init__(
        self,
        *args,
        decoder: keras.layers.Layer | None = None,
        class_capsules: str = "class_caps",
        reconstruction_weight: float = 0.0005,
        pixel_reduction: str = "sum",
        mask_top_k: int = 1,
        class_names: tuple[str, ...] | None = None,
        constructor: dict | None = None,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.class_names = class_names
        self.constructor = constructor
        errors.check_one_of(self, "pixel_reduction", pixel_reduction, ("sum", "mean"))
        if isinstance(decoder, dict):
            decoder = keras.saving.deserialize_keras_object(decoder)
        if decoder is not None and not isinstance(decoder, keras.layers.Layer):
            errors.fail(self, "decoder", "None or a Keras layer", type(decoder).__name__, TypeError)
        self.class_capsules = class_capsules
        self.reconstruction_weight = float(reconstruction_weight)
        self.pixel_reduction = pixel_reduction
        self.mask_top_k = mask_top_k
        self.class_mask = Mask(top_k=mask_top_k, name="mask")
        # Weightless, and called only in the loss with a decoder: built now, so that Keras's check before each
        # train_on_batch on JAX and PyTorch (and under a TensorFlow strategy) finds every layer built and skips
        # its symbolic forward pass.
        self.class_mask.build(None)
        self.reconstruction = ReconstructionLoss(reconstruction_weight, pixel_reduction)
        self.decoder = decoder
        self.scores_and_poses = None
        if decoder is not None:
            layer_names = [layer.name for layer in super().layers]
            if class_capsules not in layer_names:
                errors.fail(self, "class_capsules", f"the name of a layer of the model ({layer_names})", class_capsules)
            poses = keras.tree.flatten(self.get_layer(class_capsules).output)[0]
            if len(poses.shape) != 3:
                errors.fail(
                    self,
                    "class_capsules",
                    "a layer whose first output is class poses (batch, classes, capsule_dim)",
                    class_capsules,
                )
            # A second view of the same graph (shared layers, no new weights): scores and class poses in one pass.
            self.scores_and_poses = keras.Function(
                self.input, [keras.tree.flatten(self.outputs)[0], poses], name=f"{self.name}_with_poses"
            )
            if not decoder.built:
                decoder.build((None, poses.shape[1] * poses.shape[2]))

    @property
    def class_names(self) -> tuple[str, ...] | None:
        """The names of the classes, in output order (``None``: not set); kept by ``get_config`` and ``.keras`` files.

        Setting it checks the names: a sequence of strings, one per output unit when the model has a
        single ``(batch, classes)`` output.
        """
        return self._class_names

    @class_names.setter
    def class_names(self, names):
        self._class_names = check_class_names(self, names, output_units(self))

    @property
    def constructor(self) -> dict | None:
        """``{"name": <application>, "arguments": {...}}``: the call that rebuilds this architecture, or ``None``.

        The application builder records it (``EffCapsNet(...)`` -> ``{"name": "EffCapsNet", "arguments":
        {"variant": "mnist", "classes": 10, ...}}``, JSON values); ``keras_capsules.presets.save`` writes
        it to a preset folder's ``config.json``. Kept by ``get_config`` and ``.keras`` files; each read
        returns a fresh copy.
        """
        return None if self._constructor is None else json.loads(self._constructor)

    @constructor.setter
    def constructor(self, record):
        if record is not None and not (
            isinstance(record, dict)
            and isinstance(record.get("name"), str)
            and isinstance(record.get("arguments"), dict)
        ):
            errors.fail(
                self, "constructor", 'None or {"name": <application name>, "arguments": {...}}', record, TypeError
            )
        try:
            self._constructor = None if record is None else json.dumps(record, sort_keys=True)
        except (TypeError, ValueError) as error:
            errors.fail(self, "constructor", f"arguments with JSON values ({error})", record, TypeError)

    @property
    def layers(self):
        layers = super().layers
        decoder = getattr(self, "decoder", None)
        return layers + [decoder] if decoder is not None else layers

    def _where(self, method):
        return f"{type(self).__name__} '{self.name}'.{method}"

    def _check_labels(self, method, argument, labels):
        """Refuses class indices ``(N,)``/``(N, 1)`` that are not whole numbers in ``0..classes-1`` when their values are visible.

        ``classes`` is the size of a single ``(batch, classes)`` output (else only negative labels are
        refused); with one output unit the labels are targets (0/1), not indices. See the class docstring.
        """
        if not (isinstance(labels, (np.ndarray, list)) or hasattr(labels, "dtype")):
            return
        values = errors.concrete_value(labels)
        single = not isinstance(self.output, (list, tuple, dict))
        classes = self.output.shape[-1] if single and len(self.output.shape) == 2 else None
        if (
            values is not None
            and values.dtype.kind in "iuf"
            and (values.ndim == 1 or (values.ndim == 2 and values.shape[1] == 1 and classes != 1))
        ):
            errors.check_whole_labels(self._where(method), argument, values)
            if classes != 1:
                errors.check_label_range(self._where(method), argument, values, classes)

    def fit(self, *args, **kwargs):
        """``keras.Model.fit``, refusing class-index labels ``y`` and validation labels that are not whole numbers in ``0..classes-1`` (see the class docstring)."""
        arguments = _FIT.bind(self, *args, **kwargs).arguments
        self._check_labels("fit", "y", arguments.get("y"))
        validation = arguments.get("validation_data")
        if isinstance(validation, (tuple, list)) and len(validation) >= 2:
            self._check_labels("fit", "validation_data", validation[1])
        with self._training():
            return super().fit(*args, **kwargs)

    def train_on_batch(self, *args, **kwargs):
        """``keras.Model.train_on_batch``, its training state created before its first trace (see :meth:`_maybe_symbolic_build`)."""
        with self._training():
            return super().train_on_batch(*args, **kwargs)

    @contextlib.contextmanager
    def _training(self):
        """Marks a ``fit`` or ``train_on_batch`` call, for :meth:`_maybe_symbolic_build`."""
        self._in_training_call = True
        try:
            yield
        finally:
            self._in_training_call = False

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        """Creates the optimizer's, the loss's and the metrics' variables before ``fit`` or ``train_on_batch`` traces its first step.

        Keras's TensorFlow trainer does this only under a distribution strategy; otherwise it creates
        them inside the first traced step, and TensorFlow traces a ``tf.function`` that creates
        variables twice: the first step paid for its tracing twice (FMCapsNet at 64x64x3, batch 16:
        about 21 s, 11 s traced once). Built once, from the first batch's shapes
        (``keras.Model._symbolic_build``, as under a strategy), while the optimizer is unbuilt (again
        after a new ``compile``); later calls skip it, since each symbolic pass costs a traced forward
        pass. Left to Keras: a strategy, a Keras without ``_symbolic_build``, inputs with no batch, and
        ``evaluate`` alone (an evaluation does not allocate the optimizer's state). Other backends
        build this way already and never call it.
        """
        build = getattr(self, "_symbolic_build", None)
        if (
            getattr(self, "_distribute_strategy", None) is not None
            or build is None
            or not getattr(self, "_in_training_call", False)
        ):
            return super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)
        if self.optimizer is None or self.optimizer.built:
            return None
        try:
            build(iterator=iterator, data_batch=data_batch)
        except StopIteration:
            pass  # no first batch (zero examples): left to the first step, as without this

    def evaluate(self, *args, **kwargs):
        """``keras.Model.evaluate``, refusing class-index labels that are not whole numbers in ``0..classes-1``, and zero examples (see the class docstring)."""
        arguments = _EVALUATE.bind(self, *args, **kwargs).arguments
        self._check_labels("evaluate", "y", arguments.get("y"))
        counter, arguments["callbacks"] = _with_counter(arguments.get("callbacks"))
        del arguments["self"]
        extra = arguments.pop("kwargs", {})
        result = super().evaluate(**arguments, **extra)
        if counter is not None and counter.batches == 0:
            raise ValueError(
                f"{self._where('evaluate')}: argument `x` expected at least one example, received zero examples "
                f"(an empty array or dataset): a loss or metric averaged over no examples is undefined."
            )
        return result

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """``keras.Model.predict``; zero examples give empty outputs (class scores ``(0, classes)``), not an error."""
        counter, callbacks = _with_counter(callbacks)
        try:
            return super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps, callbacks=callbacks)
        except UnboundLocalError:  # Keras's predict on zero batches
            if counter is None or counter.batches:
                raise
        empty = lambda t: ops.convert_to_numpy(ops.zeros((0,) + tuple(d or 0 for d in t.shape[1:]), t.dtype))  # noqa: E731
        return keras.tree.map_structure(empty, self.output)

    def summary(
        self,
        line_length=None,
        positions=None,
        print_fn=None,
        expand_nested=False,
        show_trainable=False,
        layer_range=None,
    ):
        """``keras.Model.summary`` with a row for the decoder, which lives outside the functional graph.

        The decoder reads the label-masked class poses in the loss (and in :meth:`reconstruct`), so
        Keras's functional summary would leave its parameters out of the rows while counting them in
        the totals; its row (connected to ``mask(<class_capsules>)``) makes the rows add up to the total.
        The table is printed as plain text (no terminal colours); with ``layer_range`` it is Keras's own.
        """
        arguments = dict(
            line_length=line_length, positions=positions, expand_nested=expand_nested, show_trainable=show_trainable
        )
        if self.decoder is None or layer_range is not None:
            return super().summary(print_fn=print_fn, layer_range=layer_range, **arguments)
        captured = []
        super().summary(print_fn=lambda text, *_, **__: captured.append(text), **arguments)
        text = _with_row(captured[0], self._decoder_fields(), line_length)
        if print_fn is not None:
            print_fn(text)
        elif keras.config.is_interactive_logging_enabled():
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
            sys.stdout.flush()
        else:
            from absl import logging

            logging.info(text)

    def _decoder_fields(self):
        """The decoder's summary fields by column header."""
        poses = keras.tree.flatten(self.get_layer(self.class_capsules).output)[0]
        try:
            shape = str(tuple(self.decoder.compute_output_shape((None, poses.shape[1] * poses.shape[2]))))
        except NotImplementedError:
            shape = "?"
        return {
            "Layer (type)": f"{self.decoder.name} ({type(self.decoder).__name__})",
            "Output Shape": shape,
            "Param #": f"{self.decoder.count_params():,}",
            "Connected to": f"mask({self.class_capsules}), in the loss",
            "Trainable": "Y" if self.decoder.trainable else "N",
        }

    def call(self, inputs, training=None, mask=None):
        if training and self.decoder is not None:
            scores, poses = self.scores_and_poses(inputs)
            return scores, poses
        return super().call(inputs, training=training, mask=mask)

    def reconstruct(self, images, labels=None):
        """Reconstructions ``(batch, *image_shape)``, masked by ``labels`` or else by the ``mask_top_k`` highest scores.

        Selecting by score (not pose length) also works for routers whose poses are normalised.

        Raises:
            ValueError: the model has no decoder.
        """
        if self.decoder is None:
            errors.fail(self, "decoder", "a decoder for reconstruct() (build the model with reconstruction=True)", None)
        scores, poses = self.scores_and_poses(ops.convert_to_tensor(images))
        if labels is None:
            _, top = ops.top_k(scores, k=self.mask_top_k)
            labels = ops.sum(ops.one_hot(top, scores.shape[-1], dtype=poses.dtype), axis=1)
        return self.decoder(self.class_mask(poses, labels), training=False)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        scores, poses = y_pred if isinstance(y_pred, (tuple, list)) else (y_pred, None)
        loss = super().compute_loss(x, y, scores, sample_weight, training=training)
        if poses is not None and y is not None and self.reconstruction_weight > 0:
            images = self.decoder(self.class_mask(poses, y), training=training)
            loss = loss + self.reconstruction(x, images, sample_weight)
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        scores = y_pred[0] if isinstance(y_pred, (tuple, list)) else y_pred
        return super().compute_metrics(x, y, scores, sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "decoder": None if self.decoder is None else keras.saving.serialize_keras_object(self.decoder),
                "class_capsules": self.class_capsules,
                "reconstruction_weight": self.reconstruction_weight,
                "pixel_reduction": self.pixel_reduction,
                "mask_top_k": self.mask_top_k,
                "class_names": None if self.class_names is None else list(self.class_names),
                "constructor": self.constructor,
            }
        )
        return config


def _wrap(value, size):
    """``value`` in lines of at most ``size`` characters as rich lays out a cell: wrapped at spaces, a longer word ends in "…"."""
    return [
        w if len(w) <= size else w[: size - 1] + "…" for w in textwrap.wrap(value, size, break_long_words=False)
    ] or [""]


def _with_row(text, fields, line_length=None):
    """Keras's rendered summary ``text`` with one more table row, its cells ``fields[header]`` wrapped to the column widths.

    A ``line_length`` wider than the console gives a table cropped on the right (rich's behaviour);
    the row is laid out at that full width and cropped alike.
    """
    lines = text.split("\n")
    top = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    bottom = next(i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith("└"))
    width = len(lines[top])
    closed = lines[top].endswith("┓")
    widths = [len(segment) for segment in lines[top][1 : width - closed].split("┳")]
    shown = [cell.strip().rstrip("…") for cell in lines[top + 1][1 : width - closed].split("┃")]  # narrow: "Trai…"
    headers = [
        next((key for key in fields if shown_name and key.startswith(shown_name)), shown_name) for shown_name in shown
    ]
    if not closed and line_length:
        widths[-1] = line_length - len(widths) - 1 - sum(widths[:-1])
    cells = [_wrap(fields.get(header, ""), size - 2) for header, size in zip(headers, widths)]
    rows = []
    for row in range(max(len(cell) for cell in cells)):
        parts = []
        for header, size, cell in zip(headers, widths, cells):
            value = cell[row] if row < len(cell) else ""
            value = (
                value.rjust(size - 2)
                if header == "Param #"
                else value.center(size - 2)
                if header == "Trainable"
                else value.ljust(size - 2)
            )
            parts.append(f" {value} ")
        rows.append("│" + "│".join(parts) + "│")
    separator = "├" + "┼".join("─" * size for size in widths) + "┤"
    return "\n".join(lines[:bottom] + [line[:width] for line in [separator, *rows]] + lines[bottom:])
