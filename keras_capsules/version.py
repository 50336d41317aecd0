"""The installed version of keras-capsules, read from the package metadata; imports neither TensorFlow nor Keras."""

from importlib import metadata


def _installed_version():
    try:
        return metadata.version("keras-capsules")
    except metadata.PackageNotFoundError:  # a source tree on sys.path that pip never installed
        return "0+unknown"


__version__ = _installed_version()
