"""Atomic writes: a file or folder is written under a temporary name in the same folder, then renamed into place.

A reader (or a restarted training run) therefore sees either the previous complete version or the new
complete version, never a half-written one, whatever moment the writer is killed at.
"""

import contextlib
import json
import os
import shutil
import uuid

TEMP_MARKER = ".tmp-"


def _fsync(path):
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) if os.path.isdir(path) else os.O_RDONLY
    try:
        descriptor = os.open(path, flags)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _fsync_tree(path):
    for root, _, files in os.walk(path):
        for name in files:
            _fsync(os.path.join(root, name))
        _fsync(root)


def temporary_sibling(path, suffix=""):
    """A fresh temporary name next to ``path`` (same folder, so the final rename is atomic)."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f"{TEMP_MARKER}{name}-{uuid.uuid4().hex[:8]}{suffix}")


@contextlib.contextmanager
def atomic_file(path, suffix=""):
    """Yields a temporary path; on success the file written there replaces ``path`` atomically.

    Args:
        path: the final file.
        suffix: ending the temporary name must have (Keras needs ``.keras`` / ``.weights.h5``).
    """
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    temporary = temporary_sibling(path, suffix)
    try:
        yield temporary
        _fsync(temporary)
        os.replace(temporary, path)
        _fsync(os.path.dirname(os.path.abspath(path)))
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def write_json(path, value):
    """Writes ``value`` as JSON to ``path`` atomically."""
    with atomic_file(path) as temporary:
        with open(temporary, "w") as handle:
            json.dump(value, handle, indent=2)


@contextlib.contextmanager
def atomic_directory(path):
    """Yields a temporary folder; on success it replaces the folder ``path``.

    A new folder appears with one ``rename``. An existing one is first renamed aside, then the new one
    is renamed into place and the old one deleted, so ``path`` is at every moment absent only between
    two renames, and a complete copy always exists under one of the two names.
    """
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    temporary = temporary_sibling(path)
    os.makedirs(temporary)
    try:
        yield temporary
        _fsync_tree(temporary)
        if os.path.exists(path):
            old = temporary_sibling(path, ".old")
            os.rename(path, old)
            os.rename(temporary, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(temporary, path)
        _fsync(parent)
    finally:
        if os.path.exists(temporary):
            shutil.rmtree(temporary, ignore_errors=True)


def remove_temporaries(folder):
    """Deletes the leftovers of writers killed mid-write (names containing the temporary marker) in ``folder``."""
    if not os.path.isdir(folder):
        return
    for name in os.listdir(folder):
        if name.startswith(TEMP_MARKER):
            target = os.path.join(folder, name)
            shutil.rmtree(target, ignore_errors=True) if os.path.isdir(target) else os.remove(target)
