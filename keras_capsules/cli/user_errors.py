"""How a failed ``keras-capsules`` command is reported: a user error in one line (status 2), any other error with its traceback (status 1)."""

import linecache
import os
import sys
import traceback

#: Exception types of the library's user errors (a bad name, argument or file, a batch too large for memory): one
#: line unless --verbose.
USER_ERROR_TYPES = (ValueError, TypeError, LookupError, OSError, ImportError, NotImplementedError, MemoryError)
#: The ``keras_capsules`` package folder: a user error is raised by a ``raise`` statement below it.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def is_user_error(error):
    """Whether ``error`` reports bad input rather than a bug, so one line says all.

    True for an error of :data:`USER_ERROR_TYPES` that a ``raise`` statement of ``keras_capsules``
    raised on purpose, and for an ``OSError`` naming a file; an error escaping from a bug (a
    ``TypeError`` of a wrong call, an ``ImportError`` of a broken install) or from Keras or
    TensorFlow internals is not one, and keeps its traceback.
    """
    if not isinstance(error, USER_ERROR_TYPES):
        return False
    if isinstance(error, OSError) and error.filename is not None:
        return True
    last = error.__traceback__
    while last is not None and last.tb_next is not None:
        last = last.tb_next
    if last is None:
        return False
    filename = os.path.abspath(last.tb_frame.f_code.co_filename)
    return filename.startswith(_PACKAGE_DIR + os.sep) and linecache.getline(
        filename, last.tb_lineno
    ).lstrip().startswith("raise ")


def report(error, command, verbose):
    """Prints ``error`` of subcommand ``command`` on stderr and returns the exit status.

    Returns:
        2 for a user error (:func:`is_user_error`): one ``error:`` line, after its traceback with
        ``verbose``; 1 for any other error: its traceback and a line asking for a report.
    """
    if not is_user_error(error):
        traceback.print_exception(error)
        print(
            f"keras-capsules {command}: unexpected {type(error).__name__} (traceback above); if it is not caused by "
            "your environment, please report it.",
            file=sys.stderr,
        )
        return 1
    if verbose:
        traceback.print_exception(error)
    print(f"keras-capsules {command}: error: {error}", file=sys.stderr)
    return 2
