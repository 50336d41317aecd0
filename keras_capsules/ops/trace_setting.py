"""A process-wide setting read when a function is traced, set for the code inside a ``with`` block."""

import contextlib


class TraceSetting:
    """A boolean read while tracing (:meth:`get`), set for a ``with`` block by :meth:`scope`; blocks nest.

    Process-wide, not per thread: the replica threads a ``tf.distribute`` strategy traces in see the value
    the calling thread set.

    Args:
        default: the value outside every scope.
    """

    def __init__(self, default):
        self._values = [bool(default)]

    @contextlib.contextmanager
    def scope(self, value):
        """Sets the value for the block; the previous value is back after it, an error included."""
        self._values.append(bool(value))
        try:
            yield
        finally:
            self._values.pop()

    def get(self):
        """The innermost scope's value (the default outside every scope)."""
        return self._values[-1]
