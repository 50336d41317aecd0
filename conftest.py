"""Test-session set-up: two logical CPUs for distribution tests, deterministic seeds."""

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Tests never read or write the user's TFDS cache (~/tensorflow_datasets): a fresh empty one per session.
os.environ["TFDS_DATA_DIR"] = tempfile.mkdtemp(prefix="keras-capsules-tfds-")

import keras  # noqa: E402
import pytest  # noqa: E402

if keras.backend.backend() == "tensorflow":
    import tensorflow as tf

    _cpus = tf.config.list_physical_devices("CPU")
    # Must run before any TensorFlow op: MirroredStrategy tests use CPU:0 and CPU:1.
    tf.config.set_logical_device_configuration(_cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(1234)
    yield
