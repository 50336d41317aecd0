"""The oneDNN setting the command line applies before TensorFlow loads.

TensorFlow 2.21's oneDNN CPU kernels corrupt the heap now and then: a run of the README's main job
died with a segmentation fault in its first steps now and then (``tools/soak/README.md``), inside a TensorFlow executor
thread freeing a tensor whose freed memory a kernel had written to (TensorFlow issues #117700 and
#123109, oneDNN batched matrix products; fixed upstream after 2.21.0). The command line turns those
kernels off (``TF_ENABLE_ONEDNN_OPTS=0``) on TensorFlow 2.21, and only there, unless the variable is
already set (``TF_ENABLE_ONEDNN_OPTS=1`` keeps them on). The main job's training step is somewhat
slower without them (``benchmarks/onednn_main_job.py``). Python code that trains with the library
sets the variable itself, before importing TensorFlow.
"""

import importlib.metadata
import os
import sys

#: TensorFlow releases whose oneDNN kernels the command line turns off (version prefixes).
AFFECTED_RELEASES = ("2.21.",)
#: The distributions that install TensorFlow's Python package.
DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-intel")


def installed_tensorflow():
    """The installed TensorFlow's version, read without importing it; ``None`` when none is installed."""
    for name in DISTRIBUTIONS:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def turn_off_where_affected(environ=os.environ, version=None, modules=sys.modules):
    """Sets ``TF_ENABLE_ONEDNN_OPTS=0`` in ``environ`` on an affected TensorFlow, before it is imported.

    Left alone: a value the user set, a TensorFlow already imported (the setting is read at import),
    other releases.

    Args:
        environ: the environment to set (the process's).
        version: the TensorFlow version (default: the installed one's, :func:`installed_tensorflow`).
        modules: the imported modules (the process's ``sys.modules``).

    Returns:
        Whether it set the variable.
    """
    if "TF_ENABLE_ONEDNN_OPTS" in environ or "tensorflow" in modules:
        return False
    version = installed_tensorflow() if version is None else version
    if version is None or not version.startswith(AFFECTED_RELEASES):
        return False
    environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
    return True
