"""Application checks shared by every application's tests (keras-hub's ``run_task_test`` style).

``run_application_test`` is the one-stop check of an application constructor: it builds the model,
checks its parameter counts against the paper's, its output shape, ``predict`` against a call, its
config, one training step, the ``.keras`` round trip with equal predictions, a weights file given as
``weights=`` and (TensorFlow) SavedModel export. The smaller helpers are the pieces the
applications' own tests repeat: counting weights, asserting the counts, and random images of the
model's input shape.
"""

import json
import os
import re
import tempfile

import keras
import numpy as np

from keras_capsules import losses
from keras_capsules.testing.test_case import assert_finite, run_export_test, run_model_saving_test


def count_weights(weights):
    """The number of scalars in ``weights`` (a list of variables, e.g. ``model.trainable_weights``)."""
    return int(sum(np.prod(w.shape) for w in weights))


def assert_parameter_counts(model, trainable=None, total=None, source=""):
    """Asserts a model's trainable and total parameter counts (``None``: not checked).

    Args:
        model: a built model (or layer).
        trainable: the expected ``count_weights(model.trainable_weights)``.
        total: the expected ``count_weights(model.weights)`` (trainable, non-trainable and, for a
            reconstruction model, the decoder's).
        source: where the expected numbers come from, shown when a count differs.
    """
    if trainable is not None:
        got = count_weights(model.trainable_weights)
        assert got == trainable, f"{model.name}: {got:,} trainable parameters, expected {trainable:,} ({source})"
    if total is not None:
        got = count_weights(model.weights)
        assert got == total, f"{model.name}: {got:,} parameters, expected {total:,} ({source})"


def random_images(model, batch=2, seed=0):
    """Float32 images uniform in [0, 1), ``(batch, *input_shape)`` of ``model``'s first input."""
    shape = tuple(model.inputs[0].shape[1:])
    return np.random.default_rng(seed).uniform(size=(batch,) + shape).astype("float32")


def run_application_test(
    constructor,
    init_kwargs,
    expected_output_shape=None,
    expected_trainable_params=None,
    expected_params=None,
    source="",
    batch_size=2,
    run_predict=True,
    run_config=True,
    run_training=True,
    loss=None,
    train_steps=1,
    untrained=None,
    run_saving=True,
    run_weights_file=False,
    run_export=False,
):
    """Runs the application checks on ``constructor(**init_kwargs)``.

    - the parameter counts (``assert_parameter_counts``), where given;
    - a call on ``batch_size`` random images (``random_images``) in inference mode gives finite
      outputs ``(batch_size, *expected_output_shape)`` (or, with ``None``, the symbolic output's
      shape), the symbolic output is ``(None, *expected_output_shape)``;
    - ``predict`` gives the call's outputs (within 1e-6);
    - ``get_config`` is JSON-serialisable and ``from_config`` rebuilds the model (in the ``.keras``
      round trip, which loads through it; without ``run_saving``, here, given the weights, with the
      same outputs);
    - ``train_steps`` ``fit`` steps (Adam, learning rate 1e-2) on the images with labels ``0, 1, 2, ...``
      (modulo the classes): a finite loss, every trainable weight changed, except those whose path
      matches ``untrained``, and finite outputs after training;
    - the ``.keras`` round trip (reloaded with no custom objects) gives identical outputs
      (``run_model_saving_test``);
    - ``save_weights`` then ``constructor(**init_kwargs, weights=path)`` gives identical outputs;
    - on TensorFlow, ``model.export`` reloaded with ``tf.saved_model.load`` gives the outputs within
      1e-5 (``run_export_test``).

    Args:
        constructor: an application constructor (``keras_capsules.applications.CapsNet``, ...).
        init_kwargs: its arguments.
        expected_output_shape: the output shape of one example, e.g. ``(classes,)``, or ``None``.
        expected_trainable_params, expected_params: the paper's counts, or ``None``.
        source: where the counts come from, shown when one differs.
        batch_size: images per call (at least 2).
        run_predict, run_config, run_training, run_saving, run_weights_file, run_export: the
            checks to run (export on TensorFlow only).
        loss: the loss of the training step; default ``losses.MarginLoss()`` (the class scores of
            capsule models are lengths or activations, not logits).
        train_steps: steps on the batch; more than 1 where one step leaves some weights unchanged
            (a small ConsensusCapsNet's kernel-routing ``lambda1`` and ``mixture_logits`` need 2).
        untrained: ``None``, or a regular expression of weight paths with no gradient by design.

    Returns:
        The model (trained ``train_steps`` steps where ``run_training``).
    """
    model = constructor(**init_kwargs)
    assert_parameter_counts(model, expected_trainable_params, expected_params, source)
    x = random_images(model, batch_size)
    outputs = keras.ops.convert_to_numpy(model(x, training=False))
    symbolic = tuple(model.output.shape)
    if expected_output_shape is not None:
        assert symbolic == (None, *expected_output_shape), (symbolic, expected_output_shape)
    assert outputs.shape == (batch_size, *symbolic[1:]), (outputs.shape, symbolic)
    assert_finite(outputs)
    if run_predict:
        np.testing.assert_allclose(model.predict(x, batch_size=batch_size, verbose=0), outputs, rtol=0, atol=1e-6)
    if run_config:
        json.dumps(keras.saving.serialize_keras_object(model))
        if not run_saving:
            _check_from_config(model, x, outputs)
    if run_training:
        _check_training(model, x, loss, train_steps, untrained)
    if run_saving:
        run_model_saving_test(model, x)
    if run_weights_file:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "model.weights.h5")
            model.save_weights(path)
            again = constructor(**init_kwargs, weights=path)
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(again(x, training=False)), keras.ops.convert_to_numpy(model(x, training=False))
        )
    if run_export and keras.backend.backend() == "tensorflow":
        run_export_test(model, x, atol=1e-5)
    return model


def _check_from_config(model, x, outputs):
    """``from_config(get_config())`` with the same weights gives ``outputs``."""
    revived = type(model).from_config(model.get_config())
    assert count_weights(revived.weights) == count_weights(model.weights)
    revived.set_weights(model.get_weights())
    np.testing.assert_allclose(keras.ops.convert_to_numpy(revived(x, training=False)), outputs, rtol=0, atol=1e-6)


def _check_training(model, x, loss, steps, untrained):
    """``steps`` ``fit`` steps: a finite loss, every trainable weight (but those matching ``untrained``) moved, and
    finite outputs after them."""
    classes = model.output.shape[-1]
    y = np.arange(len(x)) % classes
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=loss or losses.MarginLoss())
    before = [keras.ops.convert_to_numpy(v).copy() for v in model.trainable_variables]
    history = model.fit(x, y, batch_size=len(x), epochs=steps, shuffle=False, verbose=0)
    assert np.all(np.isfinite(history.history["loss"])), history.history
    unchanged = [
        v.path
        for b, v in zip(before, model.trainable_variables)
        if np.array_equal(b, keras.ops.convert_to_numpy(v)) and not (untrained and re.fullmatch(untrained, v.path))
    ]
    assert unchanged == [], f"{model.name}: weights not trained in {steps} step(s): {unchanged}"
    assert_finite(keras.ops.convert_to_numpy(model(x, training=False)))
