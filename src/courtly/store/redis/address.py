"""Store URLs: ``redis://HOST:PORT[/DB]`` and ``redis+cluster://HOST:PORT[,HOST:PORT...]``."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

__all__ = ["connect", "is_redis_url"]

_SCHEMES = ("redis://", "rediss://", "redis+cluster://")


def is_redis_url(value: str) -> bool:
    """True for a store URL this module connects to."""
    return value.startswith(_SCHEMES)


def connect(url: str) -> Any:
    """An asyncio client for ``url`` (bytes in, bytes out).

    ``redis://`` and ``rediss://`` go to one server (``/DB`` picks the database);
    ``redis+cluster://`` lists startup nodes of a Redis Cluster, comma-separated (one
    reachable node is enough: the client learns the others). Raises ``ValueError``
    for anything else.
    """
    if url.startswith("redis+cluster://"):
        from redis.asyncio.cluster import ClusterNode, RedisCluster

        nodes = []
        for part in url.removeprefix("redis+cluster://").split("/")[0].split(","):
            host, sep, port = part.strip().rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValueError(f"a cluster node is HOST:PORT, not {part!r} (in {url!r})")
            nodes.append(ClusterNode(host, int(port)))
        return RedisCluster(startup_nodes=nodes, decode_responses=False)
    if url.startswith(("redis://", "rediss://")):
        from redis.asyncio import Redis

        split = urlsplit(url)
        if not split.hostname:
            raise ValueError(f"no host in {url!r}")
        return Redis.from_url(url, decode_responses=False)
    raise ValueError(f"not a Redis store URL: {url!r}")
