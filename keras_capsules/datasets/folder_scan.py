"""The walk of a folder of images: its layout, its class folders, the image files of each split and what was skipped
(see :mod:`keras_capsules.datasets.folders` for the rules)."""

import collections
import dataclasses
import os

from keras_capsules import errors
from keras_capsules.datasets.formats import DataFormatError

#: File extensions read as images (compared in lower case).
IMAGE_EXTENSIONS = (".bmp", ".gif", ".jpeg", ".jpg", ".png", ".webp")
#: Files named in a warning, at most.
NAMED = 3


@dataclasses.dataclass
class Scan:
    """What a walk of the folder found: image files per split and class folder, and what it skipped."""

    root: str
    layout: str = "class folders"
    class_folders: tuple = ()
    files: dict = dataclasses.field(default_factory=dict)  # split -> [(path, class folder index)]
    skipped: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    named: dict = dataclasses.field(default_factory=lambda: collections.defaultdict(list))
    extensions: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    nested_folders: int = 0

    def skip(self, kind, path):
        """Counts ``path`` as skipped for reason ``kind``, naming the first few."""
        self.skipped[kind] += 1
        if len(self.named[kind]) < NAMED:
            self.named[kind].append(os.path.relpath(path, self.root))


def listed(folder, scan):
    """The entries of ``folder`` sorted by name, hidden ones (``.name``) counted and left out."""
    entries = []
    with os.scandir(folder) as listing:
        listing = sorted(listing, key=lambda entry: entry.name)
    for entry in listing:
        if entry.name.startswith("."):
            scan.skip("hidden", entry.path)
        else:
            entries.append(entry)
    return entries


def walk(folder, ancestors, scan):
    """Image files under ``folder``, sorted by name, sub-folders recursively; symlinks are followed unless they loop.

    Args:
        ancestors: real paths of the folders above (and including) ``folder``: a link back to one is a cycle.
    """
    found = []
    for entry in listed(folder, scan):
        if entry.is_dir():
            real = os.path.realpath(entry.path)
            if real in ancestors:
                scan.skip("symlink_cycle", entry.path)
                continue
            scan.nested_folders += 1
            found += walk(entry.path, ancestors | {real}, scan)
        elif entry.is_file():
            extension = os.path.splitext(entry.name)[1].lower()
            if extension in IMAGE_EXTENSIONS:
                found.append(entry.path)
            else:
                scan.skip("not_image", entry.path)
                scan.extensions[extension or entry.name] += 1
        elif entry.is_symlink():
            scan.skip("broken_link", entry.path)
        else:
            scan.skip("not_image", entry.path)  # a socket, a device, a pipe
    return found


def class_folders_of(entries, scan):
    """The class folders among a split folder's ``entries`` (those that are folders), files beside them counted as skipped."""
    folders = []
    for entry in entries:
        if entry.is_dir():
            folders.append(entry)
        elif entry.is_symlink() and not entry.is_file():
            scan.skip("broken_link", entry.path)
        else:
            scan.skip("outside_class_folders", entry.path)
    return folders


def scan_folder(path, owner):
    """Walks ``path``: the layout, the sorted class folders and the image files of each split (see the module docstring)."""
    if not os.path.exists(path):
        errors.fail(owner, "path", "an existing folder of images (one sub-folder per class)", path, FileNotFoundError)
    if not os.path.isdir(path):
        errors.fail(
            owner, "path", "a folder of images (one sub-folder per class), not a file", path, NotADirectoryError
        )
    scan = Scan(path)
    top = listed(path, scan)
    names = {entry.name for entry in top if entry.is_dir()}
    if {"train", "test"} <= names:
        scan.layout = "train/ and test/"
        roots = {"train": os.path.join(path, "train"), "test": os.path.join(path, "test")}
        for entry in top:
            if entry.name not in roots:
                scan.skip("outside_class_folders", entry.path)
        by_split = {split: class_folders_of(listed(root, scan), scan) for split, root in roots.items()}
    else:
        roots = {"train": path}
        by_split = {"train": class_folders_of(top, scan)}
    folder_names = {split: [entry.name for entry in entries] for split, entries in by_split.items()}
    if "test" in folder_names and folder_names["test"] != folder_names["train"]:
        only_train = sorted(set(folder_names["train"]) - set(folder_names["test"]))
        only_test = sorted(set(folder_names["test"]) - set(folder_names["train"]))
        raise DataFormatError(
            f"{owner}: argument `path` expected train/ and test/ with the same class folders (labels are given by the "
            f"sorted names), received {path!r} with {only_train or 'none'} only in train/ and {only_test or 'none'} only in test/."
        )
    scan.class_folders = tuple(folder_names["train"])
    if len(scan.class_folders) < 2:
        where = "train/" if "test" in roots else "the folder"
        found = f"the single class folder {scan.class_folders[0]!r}" if scan.class_folders else "no class sub-folder"
        if not scan.class_folders and scan.skipped["outside_class_folders"]:
            found += f", only {scan.skipped['outside_class_folders']} files (put each image in its class's sub-folder)"
        hint = (
            ""
            if "test" in roots or "train" not in scan.class_folders
            else " (train/ is read as a split only next to test/)"
        )
        raise DataFormatError(
            f"{owner}: argument `path` expected a folder with one sub-folder of images per class, at least 2 classes (a "
            f"classifier needs two), received {path!r}: {where} holds {found}{hint}."
        )
    top_real = os.path.realpath(path)
    for split, entries in by_split.items():
        ancestors = {top_real, os.path.realpath(roots[split])}
        scan.files[split] = []
        for label, entry in enumerate(entries):
            real = os.path.realpath(entry.path)
            if real in ancestors:
                scan.skip("symlink_cycle", entry.path)
                continue
            scan.files[split] += [(file, label) for file in walk(entry.path, ancestors | {real}, scan)]
    _one_real_file_once(scan)
    if not any(scan.files.values()):
        raise DataFormatError(
            f"{owner}: argument `path` expected image files ({', '.join(IMAGE_EXTENSIONS)}) in its class folders, "
            f"received {path!r} whose {len(scan.class_folders)} class folders hold none ({skipped_words(scan) or 'nothing else either'})."
        )
    return scan


SKIP_WORDS = {
    "undecodable": "files that do not decode (corrupt, truncated or another format)",
    "not_image": "files that are not PNG/JPEG/BMP/GIF/WebP",
    "hidden": "hidden files or folders",
    "outside_class_folders": "entries outside the class folders",
    "broken_link": "broken symlinks",
    "symlink_cycle": "symlinks to a folder above them (cycles), not followed",
    "linked_duplicate": "files reached twice in one class through symlinks, read once",
    "linked_across_classes": "files reached from two classes through symlinks (two labels), left out of both",
    "linked_train_and_test": "test/ files that are also in train/ through symlinks, left out of test/",
}


def skipped_words(scan):
    return "; ".join(f"{scan.skipped[kind]} {words}" for kind, words in SKIP_WORDS.items() if scan.skipped[kind])


def _one_real_file_once(scan):
    """Leaves each real file (symlinks resolved) in one place: once per split and class, in one class, in train/ only.

    A file reached twice in one class is read once; a file reached from two classes of a split is left
    out of both (two labels cannot both be right); a test/ file also in train/ is left out of test/. So
    no file sits on both sides of the hold-out or of the train/test split. Each case is counted and named.
    """
    in_train = {os.path.realpath(path) for path, _ in scan.files.get("train", ())}
    for split, files in scan.files.items():
        labels = collections.defaultdict(set)
        for path, label in files:
            labels[os.path.realpath(path)].add(label)
        kept, seen = [], set()
        for path, label in files:
            real = os.path.realpath(path)
            if split == "test" and real in in_train:
                scan.skip("linked_train_and_test", path)
            elif len(labels[real]) > 1:
                scan.skip("linked_across_classes", path)
            elif real in seen:
                scan.skip("linked_duplicate", path)
            else:
                seen.add(real)
                kept.append((path, label))
        scan.files[split] = kept
