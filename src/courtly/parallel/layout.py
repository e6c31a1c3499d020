"""Who owns what in a partitioned crawl: the host hash, the partitions' directories,
the recorded layout (``partitions.json``), the default process count and each
partition's share of the config."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import xxhash

from courtly.config import CrawlConfig
from courtly.errors import ConfigError, StateError
from courtly.parallel.cores import available_cores
from courtly.state_dir import STATE_FILE

__all__ = [
    "IP_SLOTS_FILE",
    "LAYOUT_FILE",
    "available_cores",
    "claim_layout",
    "default_processes",
    "fsync_dir",
    "partition_config",
    "partition_dir",
    "partition_of",
    "stable_hash",
    "state_dirs",
]

LAYOUT_FILE = "partitions.json"
"""The file in a partitioned state directory that records the number of partitions."""
IP_SLOTS_FILE = "ip-slots.lock"
"""The first lock file of the per-IP slots the partitions share (the others are this
name with ``.1`` to ``.15`` appended; see :mod:`courtly.fetch.machine_ip_gate`); empty,
only their byte-range locks count."""


def stable_hash(host_key: str) -> int:
    """xxh3-64 of the UTF-8 host key: the same in every process, run and machine."""
    return xxhash.xxh3_64_intdigest(host_key.encode("utf-8"))


def partition_of(host_key: str, processes: int) -> int:
    """The partition (``0 <= i < processes``) that owns ``host_key``."""
    return stable_hash(host_key) % processes


def partition_dir(state_dir: Path, index: int, processes: int) -> Path:
    """Partition ``index``'s own state directory inside ``state_dir``."""
    return state_dir / f"part-{index}-of-{processes}"


def claim_layout(state_dir: Path, processes: int) -> None:
    """Check that ``state_dir`` may be crawled by ``processes`` processes; record it.

    A state directory keeps the number it was first crawled with: a partitioned
    one (``partitions.json``) refuses another number, a single-process one
    (``frontier.sqlite3`` at the top) refuses ``processes > 1``. Raises
    :class:`~courtly.errors.StateError` with the number to use.
    """
    layout = state_dir / LAYOUT_FILE
    if layout.exists():
        try:
            recorded = int(json.loads(layout.read_text(encoding="utf-8"))["processes"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise StateError(f"{layout} is unreadable ({error})") from None
        if recorded != processes:
            raise StateError(
                f"{state_dir} holds a crawl partitioned over {recorded} processes; "
                f"resume it with --processes {recorded} (hosts are assigned by hash mod "
                f"{recorded}, and each partition's frontier holds only its own hosts)"
            )
        return
    if processes == 1:
        return
    if (state_dir / STATE_FILE).exists():
        raise StateError(
            f"{state_dir} holds a single-process crawl; resume it with --processes 1 "
            "(or crawl with several processes into a new state directory)"
        )
    state_dir.mkdir(parents=True, exist_ok=True)
    data = {"processes": processes, "partition": "xxh3_64(utf-8 host key) % processes"}
    temporary = layout.with_suffix(".tmp")
    with temporary.open("w", encoding="utf-8") as out:
        out.write(json.dumps(data) + "\n")
        out.flush()
        os.fsync(out.fileno())
    temporary.replace(layout)
    fsync_dir(state_dir)


def state_dirs(state_dir: Path) -> list[Path]:
    """The directories holding a crawl's stores: the partitions', or ``state_dir`` itself."""
    layout = state_dir / LAYOUT_FILE
    if not layout.exists():
        return [state_dir]
    try:
        processes = int(json.loads(layout.read_text(encoding="utf-8"))["processes"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise StateError(f"{layout} is unreadable ({error})") from None
    return [partition_dir(state_dir, i, processes) for i in range(processes)]


def partitions_without_state(state_dir: Path, processes: int) -> list[int]:
    """The partitions of ``state_dir``'s layout of ``processes`` whose state file is missing:
    a crawl stopped while it started (after the layout was recorded, before they began)."""
    return [
        i
        for i in range(processes)
        if not os.path.lexists(partition_dir(state_dir, i, processes) / STATE_FILE)
    ]


def default_processes(state_dir: Path, per_ip: int, cores: int | None = None) -> int:
    """The process count of a crawl that did not pin ``--processes``.

    A state directory that already holds a crawl keeps its number (partitioned:
    ``partitions.json``; single-process: ``frontier.sqlite3``). A new crawl gets
    one process per available core (``cores``, default
    :func:`~courtly.parallel.cores.available_cores`: the affinity mask and the cgroup's
    CPU quota),
    but no more than ``per_ip``: each process needs at least one request per
    address of the shared per-IP cap.
    """
    layout = state_dir / LAYOUT_FILE
    if layout.exists():
        try:
            return int(json.loads(layout.read_text(encoding="utf-8"))["processes"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise StateError(f"{layout} is unreadable ({error})") from None
    if (state_dir / STATE_FILE).exists():
        return 1
    return max(1, min(cores if cores is not None else available_cores(), per_ip))


def partition_config(config: CrawlConfig, index: int) -> CrawlConfig:
    """The config of partition ``index``: its own state directory, its share of the fetchers
    (a pinned ``concurrency``; an autoscaled one scales in each process), of the per-IP cap
    and of the back queues. Refuses ``per_ip < processes``."""
    n = config.processes
    if config.per_ip < n:
        raise ConfigError(
            f"per_ip = {config.per_ip} cannot be shared by {n} processes: each process "
            f"gets per_ip // processes requests per address, so that the cap holds across "
            f"them; use --per-ip {n} or more, or fewer processes"
        )
    return replace(
        config,
        state_dir=partition_dir(config.state_dir, index, n),
        per_ip=config.per_ip // n,
        concurrency=None if config.concurrency is None else max(1, config.concurrency // n),
        back_queues=None if config.back_queues is None else max(1, config.back_queues // n),
    )


# -- the inbox files --------------------------------------------------------------------------


def fsync_dir(path: Path) -> None:
    """fsync the directory ``path`` (makes a file created or renamed in it durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
