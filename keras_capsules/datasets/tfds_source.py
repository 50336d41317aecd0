"""TensorFlow Datasets as a source of NumPy arrays, offline-safe.

``download=False`` never touches the network: TFDS either finds a prepared copy in its data dir
(``$TFDS_DATA_DIR``, default ``~/tensorflow_datasets``) or fails at once, and the failure is re-raised
as a ``FileNotFoundError`` whose message the caller completes with the local files it accepts.

``tensorflow-datasets`` is the ``keras-capsules[tfds]`` extra: without it, ``download=False`` reports that
no TFDS copy could be looked for (the same ``FileNotFoundError`` path) and ``download=True`` raises
:class:`TfdsNotInstalled`, both naming the extra.
"""

import logging
import os

import numpy as np

#: How to install the optional TensorFlow Datasets dependency.
TFDS_INSTALL = 'pip install "keras-capsules[tfds]"'


class TfdsNotPrepared(FileNotFoundError):
    """TFDS has no prepared copy of a dataset and downloading was not allowed."""


class TfdsNotInstalled(ImportError):
    """A TFDS download was asked for and ``tensorflow-datasets`` (the ``keras-capsules[tfds]`` extra) is not installed."""


def _import_tfds(tfds_name, download):
    """``tensorflow_datasets``, or the error above naming the ``tfds`` extra."""
    try:
        import tensorflow_datasets
    except ImportError as error:
        missing = (
            f"tensorflow-datasets is not installed ({type(error).__name__}: {error}); install it with {TFDS_INSTALL}"
        )
        if download:
            raise TfdsNotInstalled(
                f"datasets.load: downloading {tfds_name!r} from TensorFlow Datasets needs the tfds extra: {missing}."
            ) from error
        raise TfdsNotPrepared(f"no TFDS copy of {tfds_name!r} was looked for: {missing}") from None
    return tensorflow_datasets


def tfds_data_dir():
    """The folder TFDS reads prepared datasets from."""
    return os.environ.get("TFDS_DATA_DIR", os.path.join(os.path.expanduser("~"), "tensorflow_datasets"))


def tfds_arrays(tfds_name, split, keys, download=False):
    """Loads a whole TFDS split as NumPy arrays.

    Args:
        tfds_name: the TFDS dataset name, e.g. ``"cifar10"``.
        split: a TFDS split string.
        keys: feature names to return, e.g. ``("image", "label")``.
        download: allow TFDS to download and prepare the dataset.

    Returns:
        A dict ``{key: array}`` (images keep their TFDS dtype, uint8).

    Raises:
        TfdsNotPrepared: no prepared copy (or ``tensorflow-datasets`` not installed) and ``download=False``.
        TfdsNotInstalled: ``download=True`` and ``tensorflow-datasets`` is not installed.
    """
    tfds = _import_tfds(tfds_name, download)

    absl_logger = logging.getLogger("absl")
    level = absl_logger.level
    if not download:  # TFDS warns about the folders it is about to report missing; the error below says it once.
        absl_logger.setLevel(logging.ERROR)
    try:
        dataset = tfds.load(tfds_name, split=split, download=download, shuffle_files=False)
    except AssertionError as error:  # TFDS signals "not prepared" with an AssertionError.
        reason = str(error).splitlines()[0].split(". Please")[0]  # TFDS goes on with advice for tfds.load callers
        raise TfdsNotPrepared(f"TFDS has no prepared copy of {tfds_name!r} in {tfds_data_dir()} ({reason})") from None
    finally:
        absl_logger.setLevel(level)
    # batch_size=-1 in tfds.load aborts the process under tfds.testing.mock_data; batching here works everywhere.
    parts = {key: [] for key in keys}
    for batch in tfds.as_numpy(dataset.batch(4096)):
        for key in keys:
            parts[key].append(batch[key])
    return {key: np.concatenate(values) if values else np.zeros((0,)) for key, values in parts.items()}
