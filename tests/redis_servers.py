"""Redis servers for the tests: a standalone server and a 3-master Redis Cluster on loopback.

``standalone_url()`` is the running server on 127.0.0.1:6379 when it answers, else
a ``redis-server`` this module starts on a free port. ``RedisCluster.start()``
starts three cluster-enabled ``redis-server`` processes on free loopback ports,
joins them with ``redis-cli --cluster create`` and waits for ``cluster_state:ok``;
``stop()`` ends them by PID. Servers started here keep nothing on disk (no RDB, no
AOF) and are stopped when the test process exits.

Tests use a crawl name of their own and delete its keys (``delete_crawl``), so
they share a server without seeing each other.
"""

from __future__ import annotations

import atexit
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "RedisCluster",
    "cluster_url",
    "delete_crawl",
    "have_redis_server",
    "new_crawl_name",
    "standalone_url",
    "start_standalone",
    "stop_server",
]

_STANDALONE: list[str] = []
_CLUSTER: list[RedisCluster] = []


_CLUSTER_ARGS = (
    "--cluster-enabled",
    "yes",
    "--cluster-config-file",
    "nodes.conf",
    "--cluster-node-timeout",
    "2000",
)


def _cli(port: int, *args: str) -> str:
    return subprocess.run(
        ["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=5
    ).stdout


def have_redis_server() -> bool:
    return shutil.which("redis-server") is not None and shutil.which("redis-cli") is not None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _free_cluster_port(rng: random.Random) -> int:
    """A port that is free, and so is its cluster bus port (10,000 higher)."""
    for _ in range(200):
        port = rng.randrange(20_000, 50_000)
        try:
            for candidate in (port, port + 10_000):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port
    raise RuntimeError("no free pair of ports for a cluster node")


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _wait_until(check: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _start_server(port: int, directory: Path, *extra: str) -> subprocess.Popen[bytes]:
    directory.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(directory),
            "--save",
            "",
            "--appendonly",
            "no",
            "--logfile",
            str(directory / "log"),
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    atexit.register(_stop, process)
    return process


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()


def start_standalone() -> tuple[str, subprocess.Popen[bytes]]:
    """A new standalone server of its own (on a free port): its URL and process."""
    port = _free_port()
    process = _start_server(port, Path(tempfile.mkdtemp(prefix="courtly-redis-")))
    _wait_until(lambda: _answers(port), 10.0, f"redis-server on port {port}")
    return f"redis://127.0.0.1:{port}/0", process


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """Stop a server this module started (by its PID)."""
    _stop(process)


def standalone_url() -> str:
    """A standalone Redis for the tests (see the module doc)."""
    if _STANDALONE:
        return _STANDALONE[0]
    url = "redis://127.0.0.1:6379/0" if _answers(6379) else start_standalone()[0]
    _STANDALONE.append(url)
    return url


def cluster_url() -> str:
    """A 3-master cluster for the tests, started on first use and stopped at exit."""
    if not _CLUSTER:
        cluster = RedisCluster().start()
        atexit.register(cluster.stop)
        _CLUSTER.append(cluster)
    return _CLUSTER[0].url


def new_crawl_name(label: str = "t") -> str:
    """A crawl name no other test uses."""
    return f"courtly-test-{label}-{uuid.uuid4().hex[:12]}"


async def delete_crawl(client: Any, crawl: str) -> int:
    """Delete every key of ``crawl`` (on every node of a cluster); how many."""
    deleted = 0
    async for key in client.scan_iter(match=f"{crawl}:*", count=1000):
        deleted += await client.delete(key)
    return int(deleted)


@dataclass
class RedisCluster:
    """Cluster-enabled nodes on loopback (three masters, optionally a replica each),
    started and stopped by this object."""

    ports: list[int] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    directory: Path | None = None

    @property
    def url(self) -> str:
        """The store URL of the cluster (every node as a startup node)."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in self.ports)

    def start(self, masters: int = 3, replicas: int = 0) -> RedisCluster:
        try:
            self._start(masters, replicas)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, masters: int, replicas: int) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="courtly-cluster-"))
        rng = random.Random()
        self.ports = []
        while len(self.ports) < masters * (1 + replicas):
            port = _free_cluster_port(rng)
            if port not in self.ports:
                self.ports.append(port)
        for port in self.ports:
            self.processes.append(_start_server(port, self.directory / str(port), *_CLUSTER_ARGS))
        for port in self.ports:
            _wait_until(lambda port=port: _answers(port), 10.0, f"cluster node {port}")
        subprocess.run(
            [
                "redis-cli",
                "--cluster",
                "create",
                *(f"127.0.0.1:{port}" for port in self.ports),
                "--cluster-replicas",
                str(replicas),
                "--cluster-yes",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=30,
        )
        _wait_until(self._ok, 15.0, "cluster_state:ok")
        if replicas:
            _wait_until(lambda: self._synced(replicas), 15.0, "replicas in sync")

    def _synced(self, replicas: int) -> bool:
        """Every master has its ``replicas`` replicas online and none is still in its
        first full sync (a replica promoted mid-sync would come up empty)."""
        masters = online = 0
        for port in self.ports:
            out = subprocess.run(
                ["redis-cli", "-p", str(port), "info", "replication"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout
            if "role:slave" in out:
                if "master_link_status:up" not in out or "master_sync_in_progress:1" in out:
                    return False
            elif "role:master" in out:
                masters += 1
                online += out.count("state=online")
        return masters * (1 + replicas) == len(self.ports) and online == masters * replicas

    def _ok(self) -> bool:
        for port in self.ports:
            out = subprocess.run(
                ["redis-cli", "-p", str(port), "cluster", "info"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout
            if "cluster_state:ok" not in out:
                return False
        return True

    def node_id(self, port: int) -> str:
        return _cli(port, "cluster", "myid").strip()

    def add_master(self) -> int:
        """Start one more node and join it as a master without slots (``redis-cli
        --cluster add-node``); its port, once every node knows it."""
        assert self.directory is not None
        port = _free_cluster_port(random.Random())
        self.ports.append(port)
        self.processes.append(_start_server(port, self.directory / str(port), *_CLUSTER_ARGS))
        _wait_until(lambda: _answers(port), 10.0, f"cluster node {port}")
        subprocess.run(
            [
                "redis-cli",
                "--cluster",
                "add-node",
                f"127.0.0.1:{port}",
                f"127.0.0.1:{self.ports[0]}",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=30,
        )
        known = len(self.ports)
        _wait_until(
            lambda: (
                all(_cli(p, "cluster", "nodes").count(" connected") >= known for p in self.ports)
                and self._ok()
            ),
            15.0,
            "every node to know the new one",
        )
        return port

    def reshard_command(self, source: int, target: int, slots: int) -> list[str]:
        """``redis-cli --cluster reshard`` moving ``slots`` slots (the lowest the source
        holds) from the master on port ``source`` to the one on ``target``."""
        return [
            "redis-cli",
            "--cluster",
            "reshard",
            f"127.0.0.1:{source}",
            "--cluster-from",
            self.node_id(source),
            "--cluster-to",
            self.node_id(target),
            "--cluster-slots",
            str(slots),
            "--cluster-yes",
        ]

    def begin_move(self, slot: int, source: int, target: int) -> None:
        """Mark ``slot`` importing on ``target`` and migrating on ``source`` (by hand,
        as ``redis-cli --cluster reshard`` does for each slot)."""
        _cli(target, "cluster", "setslot", str(slot), "importing", self.node_id(source))
        _cli(source, "cluster", "setslot", str(slot), "migrating", self.node_id(target))

    def move_keys(self, slot: int, source: int, target: int, count: int) -> int:
        """MIGRATE up to ``count`` keys of ``slot`` from ``source`` to ``target``; how many."""
        keys = _cli(source, "cluster", "getkeysinslot", str(slot), str(count)).split()
        if keys:
            _cli(source, "migrate", "127.0.0.1", str(target), "", "0", "5000", "keys", *keys)
        return len(keys)

    def end_move(self, slot: int, target: int) -> None:
        """Give ``slot`` to ``target`` on every master."""
        target_id = self.node_id(target)
        for port in self.ports:
            _cli(port, "cluster", "setslot", str(slot), "node", target_id)

    def keys_in_slot(self, port: int, slot: int) -> int:
        return int(_cli(port, "cluster", "countkeysinslot", str(slot)) or "0")

    def owner_of(self, slot: int) -> int:
        """The port of the master that serves ``slot`` (as the first node sees it)."""
        for line in _cli(self.ports[0], "cluster", "nodes").splitlines():
            fields = line.split()
            if "master" not in fields[2]:
                continue
            for spec in fields[8:]:
                low, _, high = spec.partition("-")
                if low.isdigit() and int(low) <= slot <= int(high or low):
                    return int(fields[1].split(":")[1].split("@")[0])
        raise LookupError(f"slot {slot} is not served")

    def kill(self, port: int) -> None:
        """SIGKILL the node on ``port`` (a crash: no shutdown, no save)."""
        process = self.processes[self.ports.index(port)]
        os.kill(process.pid, signal.SIGKILL)
        process.wait()

    def stop(self) -> None:
        for process in self.processes:
            _stop(process)
        self.processes.clear()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
