"""The fingerprint of a folder of images as read: what tells two folders (or one folder before and after a change) apart.

SHA-256 over the class names in label order and, for every image read, its split, its class, its
path relative to the folder and its size in bytes (``os.stat``; the pixels are not hashed). Two
folders with the same class names and the same files of the same sizes share a fingerprint; adding,
removing, renaming or resizing an image, or renaming a class, changes it.
"""

import hashlib
import json
import os

__all__ = ["fingerprint"]


def fingerprint(root: str, class_names, files) -> dict:
    """The fingerprint of the images ``files`` read from the folder ``root``.

    Args:
        root: the folder's absolute path.
        class_names: the class names, in label order.
        files: ``[(split, path, label)]`` of every image read (``label`` an index into ``class_names``).

    Returns:
        ``{"sha256": hex digest, "files": number of images, "bytes": their total size}``.
    """
    digest = hashlib.sha256(json.dumps(list(class_names)).encode())
    total = 0
    for split, path, label in sorted((s, os.path.relpath(p, root), int(c)) for s, p, c in files):
        size = os.stat(os.path.join(root, path)).st_size
        total += size
        digest.update(json.dumps([split, class_names[label], path, size]).encode())
    return {"sha256": digest.hexdigest(), "files": len(files), "bytes": total}
