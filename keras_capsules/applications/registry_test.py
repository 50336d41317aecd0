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


#: The configurations round-tripped in the default tier check their parameter counts there (one build, not two).
_COUNTED_IN_ROUNDTRIP = {param.values[0] for param in ROUNDTRIP if not param.marks}


@pytest.mark.parametrize("name", [name for name in NAMES if name not in _COUNTED_IN_ROUNDTRIP])
def test_parameter_counts_match_the_papers(name):
    entry = applications.get_configuration(name)
    assert_parameter_counts(entry.build(), entry.trainable_params, entry.total_params, entry.source)


@pytest.mark.parametrize("name", ROUNDTRIP)
def test_counts_forward_config_save_weights_and_export(name):
    """``run_application_test`` without its training step (training/distribute_test.py fits every application) or
    ``predict`` (``CapsuleClassifier``'s, the same for every application: builder_test.py checks it)."""
    entry = applications.get_configuration(name)
    run_application_test(
        entry.constructor,
        entry.kwargs,
        expected_trainable_params=entry.trainable_params,
        expected_params=entry.total_params,
        source=entry.source,
        run_predict=False,
        run_training=False,
        run_weights_file=True,
        run_export=name in EXPORTED,
    )
