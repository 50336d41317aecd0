"""TensorFlow's native start-up lines: which are dropped."""

import os

from keras_capsules.cli.native_logs import _dropped


def test_the_cuda_builds_no_driver_line_is_dropped_only_without_a_driver(monkeypatch):
    line = "E0000 00:00:1795735104.529952   24332 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n"
    other_error = "E0000 00:00:1795735104.529952   24332 some_kernel.cc:12] out of memory\n"
    exists = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda path: False if path == "/proc/driver/nvidia" else exists(path))
    assert _dropped(line) and not _dropped(other_error)
    monkeypatch.setattr(os.path, "exists", lambda path: True if path == "/proc/driver/nvidia" else exists(path))
    assert not _dropped(line)  # with a driver loaded, a failing cuInit is news
