"""The add-on's settings: Scrapy settings named after ``courtly crawl``'s flags.

=================================  ==========================  =========================
Scrapy setting                     CLI flag                    default
=================================  ==========================  =========================
``COURTLY_STATE``                  ``--state``                 none (memory store)
``COURTLY_STORE``                  ``--store``                 ``sqlite`` with a state
``COURTLY_CRAWL_NAME``             ``--crawl-name``            none (needed with Redis)
``COURTLY_MIN_DELAY``              ``--min-delay``             1.0 s
``COURTLY_DELAY_FACTOR``           ``--delay-factor``          2.0
``COURTLY_MAX_DELAY``              ``--max-delay``             60 s
``COURTLY_PER_IP``                 ``--per-ip``                2
``COURTLY_ALLOW_PRIVATE_NETWORKS`` ``--allow-private-networks`` false
``COURTLY_BACK_QUEUES``            ``--back-queues``           see :func:`default_back_queues`
``COURTLY_MAX_WAIT``               (Scrapy only)               600 s
``COURTLY_GC_FREEZE``              (Scrapy only)               true
=================================  ==========================  =========================

The User-Agent (for robots.txt matching too) is Scrapy's ``USER_AGENT``; the number
of requests leased at once follows ``CONCURRENT_REQUESTS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from courtly.store.redis.address import check_crawl_name, check_store_url, is_redis_url

_T = TypeVar("_T")

__all__ = ["CourtlySettings", "SettingsReader", "default_back_queues"]


class SettingsReader(Protocol):
    """The part of Scrapy's ``BaseSettings`` read here."""

    def get(self, name: str, default: object = None) -> object: ...

    def getfloat(self, name: str, default: float = 0.0) -> float: ...

    def getint(self, name: str, default: int = 0) -> int: ...

    def getbool(self, name: str, default: bool = False) -> bool: ...


def default_back_queues(concurrency: int, min_delay_s: float) -> int:
    """Hosts crawled at once by default: ``CONCURRENT_REQUESTS × COURTLY_MIN_DELAY / 2``
    (the delay in seconds), at least 16 and at most ``CONCURRENT_REQUESTS``.

    A host gives at most one request per minimum delay, so a longer delay needs more
    hosts for the same rate; each host costs a robots.txt fetch and keeps the event
    loop busier, so no more than that. On the sandbox webs (docs/scrapy.md,
    "Measured"): 32 hosts for 256 requests at 0.25 s, 64 for 128 at 1 s; the earlier
    ``CONCURRENT_REQUESTS / 8`` left a 1 s crawl of 100 hosts on 16 of them.
    """
    wanted = int(concurrency * max(0.0, min_delay_s) / 2)
    return max(16, min(concurrency, wanted))


@dataclass(frozen=True, slots=True)
class CourtlySettings:
    """Everything the scheduler decides by. Durations in seconds.

    ``store`` is ``sqlite``, ``memory`` or a shared Redis frontier
    (``redis://[USER:PASS@]HOST:PORT[/DB]``,
    ``redis+cluster://[USER:PASS@]HOST:PORT[,HOST:PORT...]``), which needs
    ``crawl_name``: every Scrapy process with the same store and name joins that crawl.
    ``state_dir`` holds ``frontier.sqlite3`` (``store == "sqlite"``; unused with Redis,
    where the state lives); ``max_wait_s`` is how far ahead a host may be due and still
    keep the spider open: when every host left is due later than that (parked after
    failures, a long Retry-After), the crawl ends and those URLs stay in the state for
    the next run.
    ``lease_ttl_s`` must outlast the longest download (``DOWNLOAD_TIMEOUT``).
    ``back_queues`` is how many hosts are crawled at once: each new one costs a
    robots.txt fetch first, and a Scrapy process makes far fewer requests a second
    than courtly's own fetcher, so the default
    (:func:`default_back_queues`) is narrower than the CLI's.
    """

    state_dir: Path | None
    store: str
    min_delay_s: float = 1.0
    delay_factor: float = 2.0
    max_delay_s: float = 60.0
    per_ip: int = 2
    allow_private_networks: bool = False
    user_agent: str = "Scrapy"
    concurrency: int = 16
    lease_ttl_s: float = 240.0
    max_wait_s: float = 600.0
    back_queues: int = 16
    """:func:`default_back_queues` from :meth:`from_settings`."""
    crawl_name: str | None = None
    gc_freeze: bool = True
    """Keep the objects alive at spider open out of the cyclic collector's reach while
    the spider runs (:mod:`courtly.heap`)."""

    @property
    def shared(self) -> bool:
        """The store is shared with other processes (Redis)."""
        return is_redis_url(self.store)

    def __post_init__(self) -> None:
        if self.store == "sqlite" and self.state_dir is None:
            raise ValueError("COURTLY_STORE = 'sqlite' needs COURTLY_STATE (a directory)")
        if self.store not in ("sqlite", "memory") and not self.shared:
            raise ValueError(
                "COURTLY_STORE must be 'sqlite', 'memory' or a redis:// or redis+cluster:// "
                f"URL, not {self.store!r}"
            )
        if self.shared and not self.crawl_name:
            raise ValueError("a Redis COURTLY_STORE needs COURTLY_CRAWL_NAME (the crawl's name)")
        if self.crawl_name and not self.shared:
            raise ValueError("COURTLY_CRAWL_NAME names a crawl in a Redis COURTLY_STORE")
        if self.shared and self.crawl_name:  # ConfigErrors: ValueErrors, as the others here
            check_crawl_name(self.crawl_name, "COURTLY_CRAWL_NAME")
            check_store_url(self.store, "COURTLY_STORE")
        if min(self.min_delay_s, self.delay_factor, self.max_delay_s) < 0:
            raise ValueError("COURTLY_MIN_DELAY, _DELAY_FACTOR and _MAX_DELAY must be >= 0")
        if self.max_delay_s < self.min_delay_s:
            raise ValueError("COURTLY_MAX_DELAY must be >= COURTLY_MIN_DELAY")
        if self.per_ip < 1:
            raise ValueError("COURTLY_PER_IP must be >= 1")
        if self.concurrency < 1:
            raise ValueError("CONCURRENT_REQUESTS must be >= 1 with the courtly add-on")
        if self.back_queues < 1:
            raise ValueError("COURTLY_BACK_QUEUES must be >= 1")
        if self.max_wait_s < 0:
            raise ValueError("COURTLY_MAX_WAIT must be >= 0")

    @classmethod
    def from_settings(cls, settings: SettingsReader) -> CourtlySettings:
        """Read the ``COURTLY_*`` settings (and ``USER_AGENT``, ``CONCURRENT_REQUESTS``,
        ``DOWNLOAD_TIMEOUT``); raises :class:`ValueError` for an unusable combination."""
        raw_state = settings.get("COURTLY_STATE")
        state_dir = Path(str(raw_state)) if raw_state else None
        raw_store = str(settings.get("COURTLY_STORE") or ("sqlite" if state_dir else "memory"))
        store = raw_store if is_redis_url(raw_store) else raw_store.lower()
        raw_name = settings.get("COURTLY_CRAWL_NAME")
        typed = _Typed(settings)
        number, whole, flag = typed.number, typed.whole, typed.flag
        timeout_s = number("DOWNLOAD_TIMEOUT", 180.0)
        concurrency = whole("CONCURRENT_REQUESTS", 16)
        min_delay_s = number("COURTLY_MIN_DELAY", 1.0)
        return cls(
            state_dir=state_dir,
            store=store,
            crawl_name=str(raw_name) if raw_name else None,
            min_delay_s=min_delay_s,
            delay_factor=number("COURTLY_DELAY_FACTOR", 2.0),
            max_delay_s=number("COURTLY_MAX_DELAY", 60.0),
            per_ip=whole("COURTLY_PER_IP", 2),
            allow_private_networks=flag("COURTLY_ALLOW_PRIVATE_NETWORKS", False),
            user_agent=str(settings.get("USER_AGENT") or "Scrapy"),
            concurrency=concurrency,
            lease_ttl_s=max(60.0, timeout_s + 60.0),
            max_wait_s=number("COURTLY_MAX_WAIT", 600.0),
            gc_freeze=flag("COURTLY_GC_FREEZE", True),
            back_queues=whole("COURTLY_BACK_QUEUES", default_back_queues(concurrency, min_delay_s)),
        )


class _Typed:
    """Scrapy's typed reads of ``settings``, whose ``ValueError`` names the setting and
    its value (Scrapy's own says only what it could not convert)."""

    def __init__(self, settings: SettingsReader) -> None:
        self._settings = settings

    def number(self, name: str, default: float) -> float:
        return self._read(name, lambda: self._settings.getfloat(name, default), "a number")

    def whole(self, name: str, default: int) -> int:
        return self._read(name, lambda: self._settings.getint(name, default), "a whole number")

    def flag(self, name: str, default: bool) -> bool:
        return self._read(name, lambda: self._settings.getbool(name, default), "true or false")

    def _read(self, name: str, read: Callable[[], _T], kind: str) -> _T:
        try:
            return read()
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be {kind}, not {self._settings.get(name)!r}") from None
