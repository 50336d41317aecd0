"""The application checks pass a model that keeps them, fail where a model breaks them, and name what broke."""

import keras
import pytest

from keras_capsules.testing import assert_parameter_counts, count_weights, run_application_test


def tiny(classes=2, weights=None):
    """A constructor of the Keras Applications kind: 4x4 images -> Flatten -> Dense ``"predictions"`` (16 * classes
    weights + classes biases), ``weights`` a weights file or ``None``."""
    images = keras.Input((4, 4, 1))
    model = keras.Model(images, keras.layers.Dense(classes, name="predictions")(keras.layers.Flatten()(images)))
    if weights is not None:
        model.load_weights(weights)
    return model


def _no_gradient(y_true, y_pred):
    """A loss whose gradient is zero everywhere: no step moves a weight."""
    return keras.ops.sum(y_pred) * 0.0


def test_every_check_passes_on_a_model_that_keeps_them():
    model = run_application_test(
        tiny,
        {"classes": 3},
        (3,),
        16 * 3 + 3,
        16 * 3 + 3,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        run_weights_file=True,
    )
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 1  # one fit step
    run_application_test(tiny, {}, (2,), run_saving=False, run_training=False)  # from_config without the .keras file


def test_assert_parameter_counts_names_the_model_both_counts_and_the_source():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.BatchNormalization()], name="m")
    assert count_weights(model.trainable_weights) == 3 * 2 + 2 + 2 * 2 and count_weights(model.weights) == 16
    assert_parameter_counts(model, 12, 16)
    with pytest.raises(AssertionError, match=r"m: 12 trainable parameters, expected 13 \(Table 1\)"):
        assert_parameter_counts(model, trainable=13, source="Table 1")
    with pytest.raises(AssertionError, match=r"m: 16 parameters, expected 12"):
        assert_parameter_counts(model, total=12)


def test_the_training_check_lists_the_weights_a_step_left_unchanged():
    with pytest.raises(AssertionError, match=r"weights not trained in 1 step\(s\): \['predictions/kernel'"):
        run_application_test(tiny, {}, (2,), loss=_no_gradient, run_saving=False)
    run_application_test(tiny, {}, (2,), loss=_no_gradient, untrained="predictions/.*", run_saving=False)


def test_the_output_shape_and_counts_are_checked():
    with pytest.raises(AssertionError, match=r"\(None, 2\).*\(3,\)"):
        run_application_test(tiny, {}, (3,), run_training=False, run_saving=False)
    with pytest.raises(AssertionError, match="34 trainable parameters, expected 1 "):
        run_application_test(tiny, {}, (2,), expected_trainable_params=1, run_training=False)
