"""Shared test helpers (keras-hub style): every layer, router and model runs the same checks."""

from keras_capsules.testing.applications import (
    assert_parameter_counts,
    count_weights,
    random_images,
    run_application_test,
)
from keras_capsules.testing.gradients import (
    assert_training_vote_gradient,
    assert_training_weight_gradient,
    input_gradient,
    numeric_gradient,
)
from keras_capsules.testing.routers import (
    as_float64,
    assert_registry_round_trip,
    assert_routes_finitely,
    assert_routes_like,
    run_router_test,
)
from keras_capsules.testing.test_case import (
    assert_finite,
    run_export_test,
    run_layer_test,
    run_model_saving_test,
    run_serialization_test,
)

__all__ = [
    "as_float64",
    "assert_finite",
    "assert_parameter_counts",
    "assert_registry_round_trip",
    "assert_routes_finitely",
    "assert_routes_like",
    "assert_training_vote_gradient",
    "assert_training_weight_gradient",
    "count_weights",
    "input_gradient",
    "numeric_gradient",
    "random_images",
    "run_application_test",
    "run_export_test",
    "run_layer_test",
    "run_model_saving_test",
    "run_router_test",
    "run_serialization_test",
]
