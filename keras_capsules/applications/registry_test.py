"""Every registered application configuration is tested here the moment it is registered (timm style)."""

import keras
import numpy as np
import pytest

from keras_capsules import applications
from keras_capsules.testing import assert_finite, run_export_test, run_model_saving_test
from keras_capsules.testing.tiers import SLOW_CONSTRUCTORS, one_per_constructor, smallest_per_constructor

NAMES = applications.list_configurations()
#: SavedModel export traces the same layers for every configuration of a constructor, so it is checked on the
#: smallest round-tripped configuration of each (the .keras round trip runs for all of them). The default tier
#: round-trips CapsNet, EffCapsNet and BaselineCNN (the convolutional capsule models are exported in the default
#: tier by training/distribute_test.py); every other configuration runs in the large tier.
_ROUNDTRIP_NAMES = [n for n in NAMES if applications.get_configuration(n).roundtrip]
EXPORTED = smallest_per_constructor(_ROUNDTRIP_NAMES)
_LARGE_ROUNDTRIP = SLOW_CONSTRUCTORS + ("EffConvCapsNet", "FMCapsNet", "InvertedAttentionCapsNet")
ROUNDTRIP = one_per_constructor(_ROUNDTRIP_NAMES, large_constructors=_LARGE_ROUNDTRIP)


def _count(weights):
    return int(sum(np.prod(w.shape) for w in weights))


def _inputs(model, batch=2):
    shape = tuple(model.inputs[0].shape[1:])
    return np.random.default_rng(0).uniform(size=(batch,) + shape).astype("float32")


@pytest.mark.parametrize("name", NAMES)
def test_parameter_counts_match_the_papers(name):
    entry = applications.get_configuration(name)
    model = entry.build()
    if entry.trainable_params is not None:
        assert _count(model.trainable_weights) == entry.trainable_params, entry.source
    if entry.total_params is not None:
        assert model.count_params() == entry.total_params, entry.source


@pytest.mark.parametrize("name", ROUNDTRIP)
def test_forward_save_and_export(name):
    entry = applications.get_configuration(name)
    model = entry.build()
    x = _inputs(model)
    scores = keras.ops.convert_to_numpy(model(x, training=False))
    assert scores.shape[0] == 2
    assert_finite(scores)
    run_model_saving_test(model, x)
    if keras.backend.backend() == "tensorflow" and name in EXPORTED:
        run_export_test(model, x, atol=1e-5)
