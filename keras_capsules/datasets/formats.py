"""Readers for the files in which CIFAR, SVHN, smallNORB and affNIST are published.

Every reader returns NumPy arrays and raises :class:`DataFormatError` (a ``ValueError``) that names the
file and what is wrong with it when a file is corrupt or truncated, so a bad download never surfaces
as a shape error later. None of them touches the network.
"""

import gzip
import io
import os
import pickle
import tarfile
import zipfile
import zlib

import numpy as np


class DataFormatError(ValueError):
    """A data file is corrupt, truncated or not in the expected format."""


def read_bytes(path):
    """The bytes of ``path``, gunzipped when they are gzip data."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
        return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    except (OSError, EOFError, zlib.error) as error:
        raise DataFormatError(
            f"read_bytes: {path!r} is not a readable (gzip) file ({error}); re-download it."
        ) from None


# --------------------------------------------------------------------------------------- CIFAR

CIFAR_RECORD = 32 * 32 * 3


def _planar_to_hwc(rows):
    """CIFAR rows ``(N, 3072)`` (R, G, B planes of 32x32) -> ``(N, 32, 32, 3)``."""
    return rows.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)


def read_cifar_binary(raw, label_bytes, label_index, where):
    """Parses the CIFAR binary format: records of ``label_bytes`` label bytes then 3072 pixel bytes.

    Args:
        raw: the file contents.
        label_bytes: 1 (CIFAR-10) or 2 (CIFAR-100: coarse, fine).
        label_index: which label byte to keep (CIFAR-100 fine labels: 1).
        where: file name for error messages.

    Returns:
        ``(images uint8 (N, 32, 32, 3), labels int32 (N,))``.
    """
    record = label_bytes + CIFAR_RECORD
    if len(raw) == 0 or len(raw) % record:
        raise DataFormatError(
            f"read_cifar_binary: {where!r} is truncated or corrupt: {len(raw)} bytes is not a multiple of the {record}-byte record."
        )
    table = np.frombuffer(raw, np.uint8).reshape(-1, record)
    return _planar_to_hwc(table[:, label_bytes:]), table[:, label_index].astype("int32")


class _CifarUnpickler(pickle.Unpickler):
    """Unpickles the CIFAR python batches: dicts of bytes, lists and NumPy arrays, nothing else."""

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("_codecs", "encode"),
    }

    def find_class(self, module, name):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"global {module}.{name} is not allowed in a CIFAR batch")
        return super().find_class(module, name)


def read_cifar_pickle(raw, label_key, where):
    """Parses one CIFAR python batch (a pickled dict with ``data`` and ``labels``/``fine_labels``).

    Only the types a CIFAR batch contains are unpickled, so a tampered file cannot run code.
    """
    try:
        batch = _CifarUnpickler(io.BytesIO(raw), encoding="bytes").load()
        data = np.asarray(batch[b"data"], np.uint8)
        labels = np.asarray(batch[label_key], np.int32)
    except (pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError, AttributeError) as error:
        raise DataFormatError(
            f"read_cifar_pickle: {where!r} is not a CIFAR python batch ({error}); re-download it."
        ) from None
    if data.ndim != 2 or data.shape[1] != CIFAR_RECORD or len(data) != len(labels):
        raise DataFormatError(
            f"read_cifar_pickle: {where!r} holds data of shape {data.shape} and {len(labels)} labels; "
            f"expected (N, {CIFAR_RECORD}) and N labels."
        )
    return _planar_to_hwc(data), labels


def read_members(archive, names):
    """Reads members of a ``.tar.gz``/``.zip`` archive by base name; returns ``{base name: bytes}``."""
    found = {}
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zipped:
                for info in zipped.infolist():
                    base = os.path.basename(info.filename)
                    if base in names:
                        found[base] = zipped.read(info)
        else:
            with tarfile.open(archive, "r:*") as tar:
                for member in tar.getmembers():
                    base = os.path.basename(member.name)
                    if member.isfile() and base in names:
                        found[base] = tar.extractfile(member).read()
    except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, zlib.error) as error:
        raise DataFormatError(
            f"read_members: {archive!r} is not a readable archive ({error}); re-download it."
        ) from None
    missing = sorted(set(names) - set(found))
    if missing:
        raise DataFormatError(f"read_members: {archive!r} lacks {missing}; re-download it.")
    return found


def whole_labels(values, reader, where):
    """``values`` flattened to ``int32 (N,)`` class indices.

    Raises:
        DataFormatError: naming ``reader`` and the file ``where``, when a label is not a whole number
            (a cast would truncate 2.7 to class 2 in silence).
    """
    values = np.asarray(values).reshape(-1)
    if values.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(values) | (values != np.round(values)))
        if bad.size:
            raise DataFormatError(
                f"{reader}: {where!r} holds labels that are not whole numbers ({bad.size} of {values.size}, "
                f"first {values[bad[0]].item()!r} at index {int(bad[0])}); expected class indices."
            )
    return values.astype("int32")


# ---------------------------------------------------------------------------------- MATLAB files


def load_mat(raw, where):
    """``scipy.io.loadmat`` of MATLAB v5 bytes, with clear errors (scipy, the ``keras-capsules[mat]`` extra, reads SVHN and affNIST)."""
    try:
        from scipy import io as scipy_io
    except ImportError as error:
        raise ImportError(
            f'load_mat: reading {where!r} needs scipy, the mat extra: pip install "keras-capsules[mat]".'
        ) from error
    try:
        return scipy_io.loadmat(io.BytesIO(raw))
    except Exception as error:  # scipy raises many types (ValueError, IndexError, ...) on damaged files
        raise DataFormatError(
            f"load_mat: {where!r} is not a readable MATLAB v5 file ({type(error).__name__}: {error}); re-download it."
        ) from error


def read_svhn_mat(raw, where):
    """SVHN cropped digits (``train_32x32.mat`` ...): ``X (32, 32, 3, N)``, ``y (N, 1)`` with 10 for digit 0.

    Returns:
        ``(images uint8 (N, 32, 32, 3), labels int32 (N,))`` with labels 0-9.
    """
    mat = load_mat(raw, where)
    if "X" not in mat or "y" not in mat:
        raise DataFormatError(
            f"read_svhn_mat: {where!r} has no 'X'/'y' variables (found {sorted(k for k in mat if not k.startswith('__'))})."
        )
    images = np.asarray(mat["X"], np.uint8)
    labels = whole_labels(mat["y"], "read_svhn_mat", where)
    if images.ndim != 4 or images.shape[:3] != (32, 32, 3) or images.shape[3] != len(labels):
        raise DataFormatError(
            f"read_svhn_mat: {where!r} has X of shape {images.shape} and {len(labels)} labels; expected (32, 32, 3, N)."
        )
    return np.ascontiguousarray(images.transpose(3, 0, 1, 2)), labels % 10


def read_affnist_mat(raw, where):
    """One affNIST file (``test.mat`` or a batch ``1.mat``): struct ``affNISTdata`` with ``image (1600, N)``, ``label_int (1, N)``.

    Returns:
        ``(images uint8 (N, 40, 40, 1), labels int32 (N,))``; each 1600-vector is a row-major 40x40 image.
    """
    mat = load_mat(raw, where)
    try:
        data = mat["affNISTdata"]
        images = np.asarray(data["image"][0, 0], np.uint8)
        labels = np.asarray(data["label_int"][0, 0])
    except (KeyError, ValueError, IndexError, TypeError) as error:
        raise DataFormatError(
            f"read_affnist_mat: {where!r} has no affNISTdata struct with 'image' and 'label_int' ({error})."
        ) from None
    labels = whole_labels(labels, "read_affnist_mat", where)
    if images.ndim != 2 or images.shape[0] != 1600 or images.shape[1] != len(labels):
        raise DataFormatError(
            f"read_affnist_mat: {where!r} has images of shape {images.shape} and {len(labels)} labels; expected (1600, N)."
        )
    return np.ascontiguousarray(images.T.reshape(-1, 40, 40, 1)), labels


# ------------------------------------------------------------------------------- NORB matrices

#: NORB binary matrix magic numbers (little-endian int32) -> element dtype.
NORB_MAGIC = {
    0x1E3D4C55: np.uint8,
    0x1E3D4C54: np.dtype("<i4"),
    0x1E3D4C51: np.dtype("<f4"),
    0x1E3D4C53: np.dtype("<f8"),
}


def read_norb_matrix(raw, where):
    """Parses a NORB binary matrix (the smallNORB ``*-dat.mat``, ``*-cat.mat``, ``*-info.mat`` files).

    Format: int32 magic (0x1E3D4C55 uint8, 0x1E3D4C54 int32), int32 ``ndim``, ``max(3, ndim)`` int32
    sizes (the first ``ndim`` are the shape), then the data, all little-endian.
    """
    if len(raw) < 8:
        raise DataFormatError(f"read_norb_matrix: {where!r} is truncated inside its header.")
    magic, ndim = (int.from_bytes(raw[i : i + 4], "little") for i in (0, 4))
    if magic not in NORB_MAGIC or not 1 <= ndim <= 8:
        raise DataFormatError(f"read_norb_matrix: {where!r} is not a NORB matrix (magic {magic:#x}, ndim {ndim}).")
    header = 8 + 4 * max(3, ndim)
    if len(raw) < header:
        raise DataFormatError(f"read_norb_matrix: {where!r} is truncated inside its header.")
    shape = tuple(int.from_bytes(raw[8 + 4 * i : 12 + 4 * i], "little") for i in range(ndim))
    dtype = np.dtype(NORB_MAGIC[magic])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header != expected:
        raise DataFormatError(
            f"read_norb_matrix: {where!r} is truncated or corrupt: header shape {shape} needs {expected} data bytes, found {len(raw) - header}."
        )
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)
