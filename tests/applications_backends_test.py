"""Every application builds, trains a few steps with ``fit`` and round-trips through ``.keras`` on JAX.

The README test command's JAX part runs CapsNet (the default tier); ``--run-large`` runs every application,
with tiny inputs. On TensorFlow the same is
covered by ``keras_capsules/training/distribute_test.py`` (graph-mode ``fit`` of every application) and
``keras_capsules/applications/registry_test.py`` (the ``.keras`` round trip of every configuration).
"""

import re

import keras
import numpy as np
import pytest

from keras_capsules import applications, losses
from keras_capsules.testing import assert_finite, run_model_saving_test
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
    model = getattr(applications, name)(**TINY[name])
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(4,) + tuple(model.inputs[0].shape[1:])).astype("float32")
    y = np.arange(4) % 3
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=losses.MarginLoss())
    before = [keras.ops.convert_to_numpy(v).copy() for v in model.trainable_variables]
    history = model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0)  # 2 steps
    assert np.isfinite(history.history["loss"][0]), name
    unchanged = [
        v.path for b, v in zip(before, model.trainable_variables) if np.array_equal(b, keras.ops.convert_to_numpy(v))
    ]
    assert [path for path in unchanged if not re.fullmatch(UNUSED.get(name, "$^"), path)] == [], (
        f"{name}: weights not trained"
    )
    scores = keras.ops.convert_to_numpy(model(x, training=False))
    assert scores.shape == (4, 3)
    assert_finite(scores)
    run_model_saving_test(model, x)  # identical outputs after reloading with no custom objects
