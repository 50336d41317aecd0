"""Shared test helpers (keras-hub style): every layer, router and model runs the same checks."""

from keras_capsules.testing.gradients import assert_training_vote_gradient, input_gradient, numeric_gradient
from keras_capsules.testing.test_case import (
    assert_finite,
    run_export_test,
    run_layer_test,
    run_model_saving_test,
    run_serialization_test,
)

__all__ = [
    "assert_finite",
    "assert_training_vote_gradient",
    "input_gradient",
    "numeric_gradient",
    "run_export_test",
    "run_layer_test",
    "run_model_saving_test",
    "run_serialization_test",
]
