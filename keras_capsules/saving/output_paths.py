"""Checks before writing an output file or folder: never destroy what the user did not ask to replace."""

import os


def check_output_folder(path, *, overwrite=False, inputs=(), what="output folder"):
    """Refuses to write a folder where that would destroy something the user did not ask to replace.

    Args:
        path: the folder about to be written (created, or replaced as a whole).
        overwrite: allow replacing an existing non-empty folder.
        inputs: files or folders being read (the model being exported): never inside ``path``,
            whatever ``overwrite`` says.
        what: how error messages name ``path``.

    Raises:
        ValueError: ``path`` is an existing file, the current folder or one of its parents, a folder
            holding one of ``inputs``, or a non-empty folder while ``overwrite`` is false.
    """
    target = os.path.realpath(path)
    if os.path.isfile(target) or (os.path.exists(target) and not os.path.isdir(target)):
        raise ValueError(
            f"{what} {path!r} is an existing file, not a folder; choose another name (nothing was written)."
        )
    cwd = os.path.realpath(os.getcwd())
    if cwd == target or cwd.startswith(target + os.sep):
        raise ValueError(
            f"{what} {path!r} is the current folder or one of its parents; name a new folder such as {os.path.join(path, 'export')!r}."
        )
    for item in inputs:
        source = os.path.realpath(item)
        if source == target or source.startswith(target + os.sep):
            raise ValueError(
                f"{what} {path!r} holds the input {item!r}, which replacing it would delete; name a new folder "
                f"such as {os.path.join(path, 'export')!r}."
            )
    if os.path.isdir(target) and os.listdir(target) and not overwrite:
        raise ValueError(
            f"{what} {path!r} exists and is not empty; pass overwrite=True (CLI: --overwrite) to replace it, or choose another name."
        )


def check_output_file(path, *, overwrite=False, inputs=(), what="output file"):
    """Refuses to write the file ``path`` where that would destroy something the user did not ask to replace.

    Raises:
        ValueError: ``path`` is an existing folder, one of ``inputs``, or an existing file while
            ``overwrite`` is false.
    """
    target = os.path.realpath(path)
    if os.path.isdir(target):
        raise ValueError(
            f"{what} {path!r} is an existing folder, not a file; choose a file name (nothing was written)."
        )
    for item in inputs:
        if os.path.realpath(item) == target:
            raise ValueError(
                f"{what} {path!r} is the input {item!r}, which writing it would destroy; choose another name."
            )
    if os.path.exists(target) and not overwrite:
        raise ValueError(
            f"{what} {path!r} exists; pass overwrite=True (CLI: --overwrite) to replace it, or choose another name."
        )


def _cannot(what, path, why):
    return ValueError(f"{what} expected a folder it can create and write into, received {path!r}: {why}.")


def check_writable_folder(path, *, what="output folder"):
    """Refuses, before anything is written, a folder that cannot be created or written into (nothing is created).

    Args:
        path: the folder.
        what: how error messages name it, e.g. ``"train: argument `output` (CLI --output)"``.

    Raises:
        ValueError: ``path`` is an existing file, a file stands where one of its parents would be, or
            its nearest existing parent (or itself) cannot be written into; naming ``what``, the path and why.
    """
    target = os.path.abspath(os.fspath(path))
    existing = target
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        where = "it is an existing file" if existing == target else f"{existing!r} is a file, not a folder"
        raise _cannot(what, path, f"{where} (nothing was written)")
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "it" if existing == target else f"its parent {existing!r}"
        raise _cannot(what, path, f"no permission to write into {where} (choose a folder you can write to)")


def make_folder(path, *, what="output folder"):
    """``os.makedirs(path, exist_ok=True)``, its failures (read-only disk, no space, ...) worded as :func:`check_writable_folder`'s.

    Raises:
        ValueError: the folder cannot be created, naming ``what``, the path and the system's reason.
    """
    check_writable_folder(path, what=what)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise _cannot(what, path, f"{error.strerror or error} ({type(error).__name__})") from None
