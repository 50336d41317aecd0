"""MirroredStrategy on the two logical CPUs of conftest.py: every application fits and exports; the custom loop matches fit.

The exported SavedModels are then loaded in a fresh process in which ``import keras_capsules`` fails,
and must serve the same outputs as ``model.predict``.
"""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import applications, losses
from keras_capsules.export import export_saved_model
from keras_capsules.testing.isolation import BLOCK_LIBRARY
from keras_capsules.testing.tiers import large
from keras_capsules.training import distributed_fit, fit_custom_loop, get_strategy

# Under pytest-xdist (--dist loadgroup) the module-scoped fixture runs once: every test here on one worker.
pytestmark = pytest.mark.xdist_group("mirrored_exports")

#: Small configurations of each constructor (the paper sizes are covered by the applications' own tests).
SMALL = {
    "CapsNet": {"input_shape": (20, 20, 1), "classes": 3},
    "EffCapsNet": {"reconstruction": True},
    "MatrixCapsNet": {"variant": "small", "input_shape": (16, 16, 1), "classes": 3, "routing_iterations": 1},
    "InvertedAttentionCapsNet": {"variant": "cifar10-simple", "routing_iterations": 1},
    "FMCapsNet": {"variant": "affnist"},
    "ConsensusCapsNet": {"input_shape": (24, 24, 1), "classes": 3, "routing_iterations": 1},
    "AgreementGLOM": {
        "input_shape": (16, 16, 3),
        "classes": 3,
        "embedding_dim": 16,
        "projection_dim": 32,
        "window": 2,
        "routing_iterations": 1,
    },
    "EffConvCapsNet": {"input_shape": (64, 64, 3), "classes": 3},
    "VBCapsNet": {"input_shape": (17, 17, 2), "classes": 3, "routing_iterations": 1},
    "HeinsenCapsNet": {"input_shape": (29, 29, 2), "classes": 3, "routing_iterations": 2},
}


def _constructors():
    """Every application constructor: the registered ones, with a small configuration when one is known."""
    found = {}
    for name in applications.list_configurations():
        entry = applications.get_configuration(name)
        key = entry.constructor.__name__
        smaller = (entry.trainable_params or 1e12) < (found[key][1].get("_params", 1e12) if key in found else 1e12)
        if key not in found or smaller:
            found[key] = (entry.constructor, {**entry.kwargs, "_params": entry.trainable_params or 1e12})
    return {
        key: (ctor, SMALL.get(key, {k: v for k, v in kwargs.items() if k != "_params"}))
        for key, (ctor, kwargs) in found.items()
    }


#: The default tier: a fully connected capsule model (dynamic routing) and a convolutional one (EM routing
#: across positions); every other application runs in the large tier.
DEFAULT_TIER = ("CapsNet", "MatrixCapsNet")


@pytest.fixture(scope="module", params=["default", pytest.param("large", marks=large)])
def trained(request, tmp_path_factory):
    """Each application of the tier built in MirroredStrategy scope, fitted for one graph-mode step (2 examples per replica), exported."""
    strategy = get_strategy("mirrored")
    assert strategy.num_replicas_in_sync == 2
    folder = tmp_path_factory.mktemp("exports")
    results = {}
    tier = {
        key: value for key, value in _constructors().items() if (key in DEFAULT_TIER) == (request.param == "default")
    }
    assert request.param == "large" or set(tier) == set(DEFAULT_TIER)
    for key, (constructor, kwargs) in sorted(tier.items()):
        keras.utils.set_random_seed(0)
        with strategy.scope():
            model = constructor(**kwargs)
            model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=losses.MarginLoss())
        shape = tuple(model.inputs[0].shape[1:])
        classes = model.outputs[0].shape[-1]
        rng = np.random.default_rng(0)
        x = rng.uniform(size=(4,) + shape).astype("float32")
        y = (np.arange(4) % classes).astype("int32")
        before = [v.numpy().copy() for v in model.trainable_variables]
        history = distributed_fit(
            model, tf.data.Dataset.from_tensor_slices((x, y)).batch(4), epochs=1, verbose=0
        )  # 2 per replica
        after = [v.numpy() for v in model.trainable_variables]
        export_saved_model(model, str(folder / key))
        np.savez(folder / f"{key}.npz", x=x[:3], expected=keras.ops.convert_to_numpy(model(x[:3], training=False)))
        results[key] = (model, history, before, after)
    return folder, results


def test_every_application_fits_under_mirrored_strategy(trained):
    _, results = trained
    assert set(DEFAULT_TIER) <= set(results) or {"EffCapsNet", "AgreementGLOM"} <= set(results)
    for key, (model, history, before, after) in results.items():
        assert not model.run_eagerly, key  # a traced (graph-mode) train step
        assert np.isfinite(history.history["loss"][0]), key
        assert any(not np.array_equal(b, a) for b, a in zip(before, after)), f"{key}: no weight changed"
        assert all(isinstance(v.value, tf.distribute.DistributedValues) for v in model.trainable_variables), key


CHILD = BLOCK_LIBRARY + textwrap.dedent(
    """
    import numpy as np
    import tensorflow as tf

    folder = sys.argv[1]
    report = {"blocked": blocked, "models": {}}
    for name in sys.argv[2:]:
        data = np.load(f"{folder}/{name}.npz")
        served = tf.saved_model.load(f"{folder}/{name}")
        out = served.serve(tf.constant(data["x"])).numpy()
        report["models"][name] = float(np.max(np.abs(out - data["expected"])))
    report["loaded"] = sorted(m for m in sys.modules if m.startswith("keras_capsules"))
    print("REPORT " + json.dumps(report))
    """
)


def test_exports_serve_predictions_in_a_process_without_keras_capsules(trained):
    folder, results = trained
    names = sorted(results)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), *names], capture_output=True, text=True, timeout=240, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("REPORT "))[7:])
    assert report["blocked"] and report["loaded"] == []
    assert set(report["models"]) == set(names)
    for name, difference in report["models"].items():
        assert difference <= 1e-5, (name, difference)


@large
def test_custom_loop_matches_fit_with_the_reconstruction_loss():
    """Same model, data and SGD steps under MirroredStrategy: the custom loop and fit give the same weights and loss.

    fit uses CapsuleClassifier.compute_loss (margin + 0.392 x reconstruction MSE) with Keras' replica
    scaling, so equal results show the loop reuses that loss and scales it the same way.
    """
    strategy = get_strategy("mirrored")
    rng = np.random.default_rng(1)
    x = rng.uniform(size=(16, 28, 28, 1)).astype("float32")
    y = (np.arange(16) % 10).astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    keras.utils.set_random_seed(0)
    reference = applications.EffCapsNet(reconstruction=True).get_weights()
    trained_weights, losses_seen = [], []
    for run in ("fit", "custom_loop"):
        with strategy.scope():
            model = applications.EffCapsNet(reconstruction=True)
            model.set_weights(reference)
            model.compile(optimizer=keras.optimizers.SGD(0.05), loss=losses.MarginLoss())
        if run == "fit":
            history = model.fit(dataset, epochs=1, verbose=0, shuffle=False)
        else:
            history = fit_custom_loop(model, dataset, epochs=1, strategy=strategy, verbose=0)
        trained_weights.append([v.numpy() for v in model.trainable_variables])
        losses_seen.append(history.history["loss"][0])
    assert losses_seen[1] == pytest.approx(losses_seen[0], rel=1e-4)
    for a, b in zip(*trained_weights):
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-6)


def test_strategy_names_and_tf_config_errors(monkeypatch):
    assert get_strategy("default") is tf.distribute.get_strategy()
    mirrored = get_strategy("mirrored")
    assert sorted(mirrored.extended.worker_devices) == [
        "/job:localhost/replica:0/task:0/device:CPU:0",
        "/job:localhost/replica:0/task:0/device:CPU:1",
    ]
    with pytest.raises(ValueError, match=r"get_strategy: argument `name` expected one of"):
        get_strategy("tpu")
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["127.0.0.1:1"]}}')
    with pytest.raises(ValueError, match=r"get_strategy: environment variable `TF_CONFIG` expected JSON like"):
        get_strategy("multi_worker")
    monkeypatch.setenv(
        "TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}})
    )
    with pytest.raises(ValueError, match=r"task index 3 is outside"):
        get_strategy("multi_worker")
