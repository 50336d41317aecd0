"""Reader for the IDX files in which MNIST and Fashion-MNIST are published (optionally gzip-compressed)."""

import gzip
import hashlib
import os
import zlib

import numpy as np

_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


class IdxFormatError(ValueError):
    """An IDX file is corrupt, truncated or not an IDX file."""


def read_idx(path):
    """Reads an IDX file (``.gz`` or plain) into a NumPy array.

    Format: two zero bytes, a dtype code, the number of dimensions ``n``, ``n`` big-endian uint32 sizes,
    then the data row-major (images: magic 0x00000803, ``(count, rows, cols)`` uint8; labels:
    0x00000801, ``(count,)`` uint8).

    Raises:
        FileNotFoundError: the file does not exist.
        IdxFormatError: a bad magic number, an unknown dtype, or fewer/more data bytes than the header says.
    """
    return read_idx_with_digest(path)[0]


def read_idx_with_digest(path):
    """``(array, sha256)``: :func:`read_idx` and the SHA-256 hex digest of the decompressed file
    (what ``gunzip -c FILE | sha256sum`` prints), which identifies the contents whatever the compression.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"read_idx: no such file {path!r}.")
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as error:
        raise IdxFormatError(f"read_idx: {path!r} is not a readable gzip file ({error}); re-download it.") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _DTYPES:
        raise IdxFormatError(
            f"read_idx: {path!r} has no IDX magic number (expected 0x0000080n, found {raw[:4].hex()})."
        )
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise IdxFormatError(f"read_idx: {path!r} is truncated inside its header.")
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    dtype = np.dtype(_DTYPES[raw[2]])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header != expected:
        raise IdxFormatError(
            f"read_idx: {path!r} is truncated or corrupt: header shape {shape} needs {expected} data bytes, found {len(raw) - header}."
        )
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape), hashlib.sha256(raw).hexdigest()
