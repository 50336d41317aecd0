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
