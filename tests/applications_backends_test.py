"""Every application builds, trains a few steps with ``fit`` and round-trips through ``.keras`` on JAX and PyTorch
(``keras_capsules.testing.run_application_test``).

The README test command's JAX part runs CapsNet (the default tier); ``--run-large`` runs every application,
with tiny inputs. On TensorFlow the same is
covered by ``keras_capsules/training/distribute_test.py`` (graph-mode ``fit`` of every application) and
``keras_capsules/applications/registry_test.py`` (the ``.keras`` round trip of every configuration).
"""

import keras
import pytest

from keras_capsules import applications
from keras_capsules.testing import run_application_test
from keras_capsules.testing.tiers import large

#: A tiny configuration of every application constructor (a newly registered one must add its own).
TINY = {
    "CapsNet": {"input_shape": (20, 20, 1), "classes": 3, "reconstruction": True},
    "EffCapsNet": {"variant": "mnist", "classes": 3, "reconstruction": True},
    "MatrixCapsNet": {"variant": "small", "input_shape": (16, 16, 1), "classes": 3, "routing_iterations": 1},
    "InvertedAttentionCapsNet": {"variant": "cifar10-simple", "classes": 3, "routing_iterations": 1},
    "FMCapsNet": {"variant": "affnist", "classes": 3},
    "ConsensusCapsNet": {"input_shape": (24, 24, 1), "classes": 3, "routing_iterations": 1},
    # 3 iterations: with fewer, some column weights cannot reach the top level yet (with 1, not even the tokenizer's).
    "AgreementGLOM": {
        "input_shape": (16, 16, 3),
        "classes": 3,
        "embedding_dim": 16,
        "projection_dim": 32,
        "window": 2,
        "routing_iterations": 3,
    },
    "EffConvCapsNet": {"input_shape": (40, 40, 3), "classes": 3},
    "BaselineCNN": {"variant": "matched", "classes": 3},
    "VBCapsNet": {"input_shape": (17, 17, 2), "classes": 3, "routing_iterations": 1},
    "HeinsenCapsNet": {"input_shape": (29, 29, 2), "classes": 3, "routing_iterations": 2},
    "SRCapsNet": {"classes": 3},
}
#: Weights with no gradient by design: the class layer's kernel router outputs logits without the
#: ``|theta3| sum c log a`` term (``activation_prior=False``), so its ``theta3`` is unused.
UNUSED = {"ConsensusCapsNet": r"class_caps/kernel_router(_\d+)?/theta3"}
pytestmark = pytest.mark.skipif(
    keras.backend.backend() == "tensorflow",
    reason="TensorFlow: covered by training/distribute_test.py and applications/registry_test.py",
)
CONSTRUCTORS = sorted(
    {applications.get_configuration(n).constructor.__name__ for n in applications.list_configurations()}
)


# The default tier runs CapsNet; every other application (30-120 s each under JAX on 2 cores) the large tier.
@pytest.mark.parametrize("name", [n if n == "CapsNet" else pytest.param(n, marks=large) for n in CONSTRUCTORS])
def test_builds_trains_and_round_trips(name):
    assert name in TINY, f"{name}: add a tiny configuration to TINY"
    # Four random images, three classes: finite scores of shape (4, 3), predict and the config, 2 fit steps with
    # every weight trained (but UNUSED) and finite scores after them, and the .keras round trip.
    run_application_test(
        getattr(applications, name), TINY[name], (3,), batch_size=4, train_steps=2, untrained=UNUSED.get(name)
    )
