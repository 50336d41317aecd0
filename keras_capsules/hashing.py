"""SHA-256 of files (checkpoints, preset weights), read in 1 MiB blocks."""

import hashlib
import os


def file_sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 of the file ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
