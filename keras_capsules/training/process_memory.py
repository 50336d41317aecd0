"""The memory this process holds and may still use: ``/proc`` and the memory cgroup (v1 and v2), ``RLIMIT_AS``,
else the free physical pages the system reports."""

import os
import re

try:
    import resource
except ImportError:  # Windows: no RLIMIT_AS to read
    resource = None


PROC_MEMINFO = "/proc/meminfo"


PROC_STATUS = "/proc/self/status"


PROC_CGROUP = "/proc/self/cgroup"


CGROUP_ROOT = "/sys/fs/cgroup"


#: cgroup v1 writes "no limit" as a number near 2**63.
_CGROUP_V1_UNLIMITED = 2**60


def _read(path):
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def _kib_field(text, field):
    """The ``field:  N kB`` value of a ``/proc`` file's ``text``, in bytes; ``None`` when absent."""
    match = re.search(rf"^{field}:\s+(\d+)\s*kB", text or "", re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def resident_bytes() -> int | None:
    """This process's resident memory now (``VmRSS`` of ``/proc/self/status``); ``None`` where there is no ``/proc``."""
    return _kib_field(_read(PROC_STATUS), "VmRSS")


def _cgroup_headroom():
    """The least ``limit - usage`` over this process's memory cgroup and its ancestors (v2 and v1), or ``None``."""
    room = []
    for line in (_read(PROC_CGROUP) or "").splitlines():
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        if controllers == "":  # v2: "0::/path"
            base, limit_file, usage_file = CGROUP_ROOT, "memory.max", "memory.current"
        elif "memory" in controllers.split(","):
            base, limit_file, usage_file = (
                os.path.join(CGROUP_ROOT, "memory"),
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        else:
            continue
        parts = [p for p in path.split("/") if p]
        for depth in range(len(parts), -1, -1):  # the process's own group, then each ancestor (a namespaced root: "/")
            folder = os.path.join(base, *parts[:depth])
            limit, usage = _read(os.path.join(folder, limit_file)), _read(os.path.join(folder, usage_file))
            if limit is None or usage is None or limit.strip() == "max":
                continue
            if int(limit) < _CGROUP_V1_UNLIMITED:
                room.append(int(limit) - int(usage))
    return min(room) if room else None


def available_bytes() -> int | None:
    """The most resident memory this process can reach: its resident memory now plus the least headroom of

    - the system's ``MemAvailable`` (``/proc/meminfo``),
    - its memory cgroup: ``memory.max - memory.current`` (v2) or ``memory.limit_in_bytes -
      memory.usage_in_bytes`` (v1), over its group and the groups above it,
    - ``RLIMIT_AS`` where set: the limit less the address space in use (``VmSize``).

    Comparable with :attr:`~keras_capsules.training.memory_plan.TrainingPlan.peak_bytes`, which counts the whole process. Without ``/proc``
    (macOS, Windows): the free physical pages (``os.sysconf("SC_AVPHYS_PAGES")``) where the system
    reports them, else ``None`` (unknown: :func:`~keras_capsules.training.memory_plan.check` then checks nothing).
    """
    status = _read(PROC_STATUS)
    resident = _kib_field(status, "VmRSS") or 0
    room = [_kib_field(_read(PROC_MEMINFO), "MemAvailable"), _cgroup_headroom()]
    address_space = _kib_field(status, "VmSize")
    soft = resource.getrlimit(resource.RLIMIT_AS)[0] if resource is not None else None
    if soft not in (None, getattr(resource, "RLIM_INFINITY", None)) and address_space is not None:
        room.append(soft - address_space)
    room = [r for r in room if r is not None]
    if not room:
        try:
            room = [os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")]
        except (AttributeError, ValueError, OSError):
            return None
    return resident + max(min(room), 0)
