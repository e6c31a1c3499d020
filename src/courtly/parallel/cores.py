"""How many CPU cores this process may use: its affinity mask, and the CPU quota of its
cgroup (a container's ``--cpus``, a Kubernetes CPU limit), whichever is smaller.

The affinity mask alone counts every core of the machine in a container that may use
two of them: 64 processes would share two cores' worth of CPU time, each throttled in
turn. The quota is read as Linux publishes it, version 2 (``cpu.max``: ``QUOTA PERIOD``
or ``max``) and version 1 (``cpu.cfs_quota_us`` and ``cpu.cfs_period_us``, -1 for none),
in the process's own cgroup and each one above it (a parent's quota binds its children),
the tightest of them; then whole cores, rounded down (a 1.5-core quota is one core: a
second process would be throttled for the rest of each period), at least 1. Where
nothing can be read (not Linux, no cgroup file system) there is no quota.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

__all__ = ["available_cores", "cgroup_cpu_quota"]

_PROC_CGROUP = Path("/proc/self/cgroup")
_CGROUP_ROOT = Path("/sys/fs/cgroup")
_V1_MOUNTS = ("cpu", "cpu,cpuacct", "cpuacct,cpu")
"""Where a version-1 ``cpu`` controller is mounted under the cgroup root."""


def available_cores(*, proc_cgroup: Path = _PROC_CGROUP, cgroup_root: Path = _CGROUP_ROOT) -> int:
    """The CPU cores this process may use: its affinity mask, cut to the whole cores of
    its cgroup's CPU quota (:func:`cgroup_cpu_quota`), at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_quota(proc_cgroup=proc_cgroup, cgroup_root=cgroup_root)
    if quota is not None:
        cores = min(cores, math.floor(quota))
    return max(1, cores)


def cgroup_cpu_quota(
    *, proc_cgroup: Path = _PROC_CGROUP, cgroup_root: Path = _CGROUP_ROOT
) -> float | None:
    """The tightest CPU quota over this process's cgroups and their ancestors, in cores
    (quota over period), or ``None`` where there is none or none can be read."""
    try:
        lines = proc_cgroup.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    quotas: list[float] = []
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and not controllers:  # version 2 (or a hybrid's unified part)
            for base in (cgroup_root, cgroup_root / "unified"):
                quotas.extend(_up_from(base, path, _v2_quota))
        elif "cpu" in controllers.split(","):
            for mount in _V1_MOUNTS:
                quotas.extend(_up_from(cgroup_root / mount, path, _v1_quota))
    return min(quotas, default=None)


def _up_from(base: Path, path: str, quota_of: Callable[[Path], float | None]) -> Iterator[float]:
    """The quotas set in ``base/path`` and in each directory above it up to ``base``.

    In a container the cgroup file system is mounted at the container's own cgroup,
    while ``/proc/self/cgroup`` may name it from the host's root: the directories that
    do not exist are skipped, and ``base`` itself is always looked at."""
    parts = PurePosixPath(path).parts[1:] if path.startswith("/") else PurePosixPath(path).parts
    for depth in range(len(parts), -1, -1):
        quota = quota_of(base.joinpath(*parts[:depth]))
        if quota is not None:
            yield quota


def _v2_quota(directory: Path) -> float | None:
    try:
        fields = (directory / "cpu.max").read_text(encoding="utf-8").split()
        if not fields or fields[0] == "max":
            return None
        period = int(fields[1]) if len(fields) > 1 else 100_000
        quota = int(fields[0])
    except (OSError, ValueError):
        return None
    return quota / period if quota > 0 and period > 0 else None


def _v1_quota(directory: Path) -> float | None:
    try:
        quota = int((directory / "cpu.cfs_quota_us").read_text(encoding="utf-8"))
        period = int((directory / "cpu.cfs_period_us").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return quota / period if quota > 0 and period > 0 else None
