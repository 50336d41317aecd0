"""Importing Keras for a ``keras-capsules`` command without the INFO lines TensorFlow's C++ libraries print while they load."""

import contextlib
import os
import re
import sys
import tempfile

#: What TensorFlow's C++ libraries print at INFO level while they load, whatever TF_CPP_MIN_LOG_LEVEL says
#: ("oneDNN custom operations are on ...", and absl's preamble to it).
_NATIVE_INFO_LINE = re.compile(
    r"I\d{4} [\d:.]+ +\d+ \S+:\d+\] |WARNING: All log messages before absl::InitializeLog\(\) is called"
)
#: The CUDA build of TensorFlow (the ``tensorflow`` package) on a machine without an NVIDIA driver: an
#: ERROR line that only says there is no GPU. Dropped only where no driver is loaded (``/proc/driver/nvidia``).
_NO_DRIVER_LINE = re.compile(r"E\d{4} [\d:.]+ +\d+ cuda_platform\.cc:\d+\] failed call to cuInit")


def _dropped(line):
    """Whether ``line`` of native stderr output is noise (:data:`_NATIVE_INFO_LINE`, :data:`_NO_DRIVER_LINE`)."""
    return bool(
        _NATIVE_INFO_LINE.match(line) or (_NO_DRIVER_LINE.match(line) and not os.path.exists("/proc/driver/nvidia"))
    )


@contextlib.contextmanager
def _native_info_lines_dropped():
    """Drops the INFO lines native code writes to file descriptor 2 inside the block; every other line is kept, in order."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no file descriptor 2: nothing to filter
        yield
        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            lines = captured.read().decode(errors="replace").splitlines(keepends=True)
            sys.stderr.write("".join(line for line in lines if not _dropped(line)))
            sys.stderr.flush()


def import_keras():
    """Imports Keras (and its backend) once, and finds TensorFlow's devices, without the backend's INFO lines
    (and the CUDA build's no-driver line) when TF_CPP_MIN_LOG_LEVEL >= 1."""
    if "keras" in sys.modules:
        return
    level = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0")
    quiet = _native_info_lines_dropped() if level.isdigit() and int(level) >= 1 else contextlib.nullcontext()
    with quiet:
        import keras

        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            tf.config.list_physical_devices()  # the device search is what tries CUDA
