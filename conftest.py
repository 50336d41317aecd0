"""Test-session set-up: two logical CPUs for distribution tests, deterministic seeds, fast XLA compiles."""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Tests never read or write the user's TFDS cache (~/tensorflow_datasets): a fresh empty one per session.
# Removed when the process exits (each xdist worker makes its own).
os.environ["TFDS_DATA_DIR"] = tempfile.mkdtemp(prefix="keras-capsules-tfds-")
atexit.register(shutil.rmtree, os.environ["TFDS_DATA_DIR"], ignore_errors=True)
# Under JAX, XLA compiles every function and eager op at each new shape, and with this suite's tiny
# shapes compiling takes most of the time. Skipping LLVM's code-generation optimisations about halves
# the JAX tests on CPU; XLA's own passes (fusion, algebraic simplification) still run, so the programs
# tested are the ones users run. An XLA_FLAGS set by the caller is left as it is.
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")
# Tests that measure live tensors read TensorFlow's allocator statistics (get_memory_info), which the CPU
# allocator keeps only as a BFC allocator; TensorFlow picks one by itself only with oneDNN on, i.e. on CPUs
# with AVX-512 VNNI/BF16 or AMX. Asked for here, so those tests measure on every CPU.
os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")

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


# Two tiers (keras-hub's `large` tests): the default tier is what CI runs on every change and must finish within
# 15 minutes on 2 cores; tests marked `large` (end-to-end training, every application through distribution
# and export, the notebooks, kill-and-resume in fresh processes) run with `--run-large`. Each large test
# has a default-tier sibling on a smaller case where one exists (keras_capsules/testing/tiers.py).
def pytest_addoption(parser):
    parser.addoption("--run-large", action="store_true", help="also run the tests marked `large` (the full suite)")


def pytest_configure(config):
    config.addinivalue_line("markers", "large: slow end-to-end test, run with --run-large (not in CI's default tier)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-large"):
        return
    skip = pytest.mark.skip(reason="large: runs with `pytest --run-large` (the full suite); CI runs the default tier")
    for item in items:
        if "large" in item.keywords:
            item.add_marker(skip)
