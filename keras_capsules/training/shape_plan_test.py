"""A model built from its shapes: nothing allocated, planned as the built model, and no trace left on the models built after."""

import keras
import numpy as np

from keras_capsules import applications
from keras_capsules.training import memory_plan, shape_plan


def _compiled(model):
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy())
    return model


def test_a_model_from_shapes_allocates_no_weight_and_plans_as_the_built_one():
    with shape_plan.from_shapes():
        abstract = applications.EffCapsNet(input_shape=(28, 28, 1), classes=3)
    abstract = _compiled(abstract)  # compile makes a few scalars (the loss tracker), outside
    assert shape_plan.is_from_shapes(abstract)
    planned = memory_plan.estimate(abstract, 8)
    built = _compiled(applications.EffCapsNet(input_shape=(28, 28, 1), classes=3))
    assert not shape_plan.is_from_shapes(built)
    expected = memory_plan.estimate(built, 8)
    assert planned.parameters == expected.parameters == built.count_params()
    assert planned.weights_bytes == expected.weights_bytes == 4 * built.count_params()
    assert planned.optimizer_bytes == expected.optimizer_bytes
    assert planned.step_live_bytes == expected.step_live_bytes
    # The built step reads its weights (ReadVariableOp, 65 here) and assigns the batch statistics; the planned one takes
    # them as inputs, left out, and records the assignments: the step graph's bytes differ by those few ops.
    assert 0 < expected.step_ops - planned.step_ops < 0.1 * expected.step_ops


def test_models_built_after_get_the_names_and_weights_they_would_have_had():
    def capsnet():
        return applications.CapsNet(input_shape=(28, 28, 1), classes=4, reconstruction=False)

    keras.utils.set_random_seed(3)
    capsnet()
    without = capsnet()
    keras.utils.set_random_seed(3)
    before = capsnet()
    with shape_plan.from_shapes():
        capsnet()
    after = capsnet()
    # Keras numbers unnamed layers per process: the input after `before`'s "input_layer_<n>" is "input_layer_<n + 1>".
    number = int(before.layers[0].name.rpartition("_")[2])
    assert after.layers[0].name == f"input_layer_{number + 1}"
    assert len(after.get_weights()) == len(without.get_weights()) > 0
    for mine, theirs in zip(after.get_weights(), without.get_weights()):
        np.testing.assert_array_equal(mine, theirs)
