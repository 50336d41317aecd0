"""Every registered application configuration is tested here the moment it is registered (timm style)."""

import pytest

from keras_capsules import applications
from keras_capsules.testing import assert_parameter_counts, run_application_test
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


@pytest.mark.parametrize("name", NAMES)
def test_parameter_counts_match_the_papers(name):
    entry = applications.get_configuration(name)
    assert_parameter_counts(entry.build(), entry.trainable_params, entry.total_params, entry.source)


@pytest.mark.parametrize("name", ROUNDTRIP)
def test_forward_predict_config_save_weights_and_export(name):
    """``run_application_test`` without its training step (training/distribute_test.py fits every application)."""
    entry = applications.get_configuration(name)
    run_application_test(
        entry.constructor, entry.kwargs, run_training=False, run_weights_file=True, run_export=name in EXPORTED
    )
