"""The machine a record was measured on: the CPU's model name and flags, read from ``/proc/cpuinfo``.

The run records of the benchmarks, the presets and the docs' results name their host with :func:`cpu_name`.

    >>> text = "processor\\t: 0\\nmodel name\\t: AMD EPYC\\nflags\\t\\t: fpu sse2 avx2\\n"
    >>> cpu_name(text), cpu_flags(text)
    ('AMD EPYC', ['fpu', 'sse2', 'avx2'])
"""

import platform

#: Where Linux describes the CPUs (one block per logical CPU, ``field\\t: value`` lines).
PROC_CPUINFO = "/proc/cpuinfo"


def cpuinfo():
    """The text of :data:`PROC_CPUINFO`; ``""`` where there is none (not Linux, or not readable)."""
    try:
        with open(PROC_CPUINFO) as handle:
            return handle.read()
    except OSError:
        return ""


def _first(text, field):
    """The value of ``text``'s first ``field`` line (``field\\t: value``); ``None`` when there is none."""
    return next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith(field)), None)


def cpu_name(text=None):
    """The CPU's model name: the first ``model name`` of ``text`` (the text of ``/proc/cpuinfo``; this machine's
    when ``None``), else the platform's processor string, else its machine type (``"x86_64"``)."""
    name = _first(cpuinfo() if text is None else text, "model name")
    return (platform.processor() or platform.machine()) if name is None else name


def cpu_flags(text=None):
    """The CPU's feature flags, the first ``flags`` line of ``text`` (this machine's ``/proc/cpuinfo`` when
    ``None``) split on whitespace; ``[]`` when it has none."""
    flags = _first(cpuinfo() if text is None else text, "flags")
    return [] if flags is None else flags.split()
