"""Store URLs: ``redis://[USER:PASS@]HOST:PORT[/DB]`` and
``redis+cluster://[USER:PASS@]HOST:PORT[,HOST:PORT...]``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

if TYPE_CHECKING:
    from courtly.frontier.config import QueueConfig
    from courtly.store.redis.store import RedisStore

__all__ = [
    "check_crawl_name",
    "check_store_url",
    "connect",
    "is_redis_error",
    "is_redis_url",
    "open_redis_store",
    "replica_options",
    "shown",
    "store_options",
]

_SCHEMES = ("redis://", "rediss://", "redis+cluster://")


def is_redis_error(error: BaseException) -> bool:
    """Whether ``error`` is the Redis client's (an unreachable server, say). Loads nothing:
    the client's exceptions are looked up only if a Redis store loaded them, so a local
    crawl never imports the client to find out."""
    exceptions = sys.modules.get("redis.exceptions")
    return exceptions is not None and isinstance(error, exceptions.RedisError)


def check_crawl_name(name: str, label: str = "--crawl-name") -> None:
    """Raise :class:`~courtly.errors.ConfigError` unless ``name`` can name a shared crawl:
    its keys are ``<name>:...`` and ``<name>:{<name>.<shard>}:...``, so no colon, brace or
    whitespace (a brace would change a Redis Cluster hash tag). ``label`` names the
    setting in the message."""
    from courtly.errors import ConfigError

    if not name or any(c in name for c in "{}:") or any(c.isspace() for c in name):
        raise ConfigError(
            f"{label} must be a non-empty name without colons, braces or spaces, not {name!r}"
        )


def is_redis_url(value: str) -> bool:
    """True for a store URL this module connects to."""
    return value.startswith(_SCHEMES)


def shown(url: str) -> str:
    """``url`` as it may be printed, logged or stored: a password in it (``user:PASS@``
    or a ``password=`` query parameter, both of which the Redis client reads) replaced
    by ``***``. Anything else is returned as it is."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    base, qsep, query = rest.partition("?")
    userinfo, at, hosts = base.rpartition("@")
    if at and ":" in userinfo:
        base = f"{userinfo.partition(':')[0]}:***@{hosts}"
    if qsep:
        query = "&".join(
            f"{part.partition('=')[0]}=***" if part.partition("=")[0] == "password" else part
            for part in query.split("&")
        )
    return f"{scheme}://{base}{qsep}{query}"


_OURS = ("wait", "wait_ms", "affinity")


def _split_ours(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without the store's own query parameters, and those parameters."""
    base, sep, query = url.partition("?")
    if not sep:
        return url, {}
    pairs = parse_qsl(query, keep_blank_values=True)
    ours = {k: v for k, v in pairs if k in _OURS}
    rest = urlencode([(k, v) for k, v in pairs if k not in _OURS])
    return (f"{base}?{rest}" if rest else base), ours


def replica_options(url: str) -> dict[str, Any]:
    """The ``RedisStore`` keywords a store URL asks for: ``?wait=N`` waits after every
    writing step until N replicas hold it (``replica_acks``), for at most ``wait_ms``
    milliseconds (default 50; ``replica_wait_s``). Raises ``ValueError`` for a bad value."""
    ours = _split_ours(url)[1]
    if "wait" not in ours and "wait_ms" not in ours:
        return {}
    try:
        acks = int(ours.get("wait", "0"))
        wait_ms = float(ours.get("wait_ms", "50"))
    except ValueError:
        raise ValueError(f"wait and wait_ms must be numbers (in {shown(url)!r})") from None
    if acks < 0 or wait_ms <= 0:
        raise ValueError(f"wait must be >= 0 and wait_ms > 0 (in {shown(url)!r})")
    return {"replica_acks": acks, "replica_wait_s": wait_ms / 1000.0}


def store_options(url: str) -> dict[str, Any]:
    """Every ``RedisStore`` keyword a store URL asks for: :func:`replica_options`, and
    ``?affinity=S``, the grace in seconds before a fetcher leases a shard another live
    fetcher owns (``affinity_grace_s``; 0 turns shard affinity off; the store's default
    when absent). Raises ``ValueError`` for a bad value."""
    options = replica_options(url)
    raw = _split_ours(url)[1].get("affinity")
    if raw is not None:
        try:
            grace_s = float(raw)
        except ValueError:
            raise ValueError(f"affinity must be a number of seconds (in {shown(url)!r})") from None
        if not grace_s >= 0 or grace_s == float("inf"):
            raise ValueError(f"affinity must be >= 0 and finite (in {shown(url)!r})")
        options["affinity_grace_s"] = grace_s
    return options


def check_store_url(url: str, label: str = "--store") -> None:
    """Raise :class:`~courtly.errors.ConfigError` unless ``url`` is a store URL the store
    and the Redis client accept: its own options (:func:`store_options`), the client
    :func:`connect` builds (a cluster's nodes; one server's host, port and database), and
    for one server every query parameter the client reads (its pool makes a connection
    object, as the client would, with no connection opened). Loads the client library;
    connects to nothing. ``label`` names the setting in the message."""
    from courtly.errors import ConfigError

    try:
        store_options(url)
        pool = getattr(connect(url), "connection_pool", None)  # a cluster client has none
        if pool is not None:
            pool.make_connection()
    except (ValueError, TypeError) as error:
        raise ConfigError(f"{label} {shown(url)}: {error}") from None


def open_redis_store(url: str, crawl_name: str, queues: QueueConfig) -> RedisStore:
    """The crawl ``crawl_name``'s store at the store URL ``url``: its client
    (:func:`connect`) and every option the URL asks for (:func:`store_options`), for
    each fetcher of the crawl, ``courtly crawl`` and the Scrapy add-on alike."""
    from courtly.store.redis.store import RedisStore  # the client library loads only here

    return RedisStore(connect(url), crawl_name, queues, **store_options(url))


def connect(url: str) -> Any:
    """An asyncio client for ``url`` (bytes in, bytes out).

    ``redis://`` and ``rediss://`` go to one server (``/DB`` picks the database);
    ``redis+cluster://[USER:PASS@]HOST:PORT[,HOST:PORT...]`` lists startup nodes of a
    Redis Cluster, comma-separated (one reachable node is enough: the client learns the
    others), with the credentials every node takes. Raises ``ValueError`` for anything
    else (its message shows the URL without its password). The store's own query
    parameters (``wait``, ``wait_ms``, ``affinity``: see :func:`store_options`) are not
    the client's.
    """
    url = _split_ours(url)[0]
    if url.startswith("redis+cluster://"):
        from redis.asyncio.cluster import ClusterNode, RedisCluster

        where = url.removeprefix("redis+cluster://").split("/")[0].split("?")[0]
        userinfo, at, where = where.rpartition("@")
        user, colon, password = userinfo.partition(":")
        nodes = []
        for part in where.split(","):
            host, sep, port = part.strip().rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValueError(f"a cluster node is HOST:PORT, not {part!r} (in {shown(url)!r})")
            nodes.append(ClusterNode(host, int(port)))
        return RedisCluster(
            startup_nodes=nodes,
            decode_responses=False,
            username=unquote(user) if at and user else None,
            password=unquote(password) if at and colon else None,
        )
    if url.startswith(("redis://", "rediss://")):
        from redis.asyncio import Redis

        split = urlsplit(url)
        if not split.hostname:
            raise ValueError(f"no host in {shown(url)!r}")
        return Redis.from_url(url, decode_responses=False)
    raise ValueError(f"not a Redis store URL: {shown(url)!r}")
