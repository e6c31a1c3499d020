"""The crawl's configuration: one frozen dataclass. Every field has a unit in its name
where it has one (durations in seconds, sizes in bytes)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Final, Literal

from courtly.config.inputs import check_seeds, check_user_agent
from courtly.config.settings import check_setting, checked_settings, flag_name
from courtly.errors import ConfigError
from courtly.store.redis.address import check_crawl_name, is_redis_url, shown
from courtly.url.params import DEFAULT_PARAMS, ParamPolicy

__all__ = ["DEFAULT_BACK_QUEUES", "CrawlConfig", "ScopeMode", "StoreKind"]

ScopeMode = Literal["host", "domain", "any"]
StoreKind = Literal["sqlite", "memory"]
DEFAULT_BACK_QUEUES = 10_000
"""Default cap on hosts holding a back-queue slot (``CrawlConfig.back_queues``)."""
_CHECKED: Final = checked_settings()


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    """Everything a crawl is decided by. Durations in seconds, sizes in bytes."""

    state_dir: Path
    """Directory holding the frontier, the catalogue and the WARC files."""
    user_agent: str
    """Sent on every request; must contain a product token and a contact."""
    seeds: tuple[str, ...] = ()
    min_delay_s: float = 1.0
    """Least gap between the end of a response and the next request to that host."""
    delay_factor: float = 2.0
    """The gap is also at least this multiple of the last fetch's duration."""
    max_delay_s: float = 60.0
    """Cap on the two terms above (not on robots Crawl-delay or Retry-After)."""
    max_time_s: float | None = None
    """Stop after this long; in-flight requests finish or are abandoned cleanly."""
    max_pages: int | None = None
    """Stop after this many fetched pages (robots.txt not counted)."""
    concurrency: int | None = None
    """Fetchers: requests in flight at most (each to a different host). ``None`` (default):
    autoscaled per process between 8 and 1024 by CPU use and event-loop lag
    (``courtly.autoscale``); a number pins it."""
    per_ip: int = 2
    """Requests in flight to one resolved IP address."""
    processes: int = 1
    """Crawler processes, each owning the hosts whose stable hash falls in its partition
    (``courtly.parallel``); ``concurrency`` and ``per_ip`` are shared out between them.
    A resumed crawl must keep the same number."""
    back_queues: int | None = None
    """Cap on the hosts holding a back-queue slot at once (a memory bound; default
    10,000). How many do hold one follows demand: a lease that finds too few ready hosts
    takes more in, and a host that must wait longer than a few delays gives its slot up
    (see docs/frontier.md)."""
    hosts_file: Path | None = None
    """An /etc/hosts-format file that overrides DNS for the names it lists."""
    allow_private_networks: bool = False
    """Allow loopback/private/link-local targets (the sandbox web needs it)."""
    verify_tls: bool = True
    """Check https servers' certificates (chain and name); ``False`` fetches from a server
    whose certificate is expired, self-signed or for another name, as an archive that
    wants the page as served may (Heritrix and Scrapy do not check by default)."""
    scope: ScopeMode = "domain"
    host_key: Literal["host", "domain"] = "host"
    """Politeness unit: each host (default), or each registered domain (all its hosts share
    one request in flight and one gap)."""
    include: tuple[str, ...] = ()
    """Regexes; when given, a URL must match one of them."""
    exclude: tuple[str, ...] = ()
    """Regexes; a URL matching any of them is skipped."""
    max_depth: int | None = None
    """Links this many hops from a seed are the last ones followed."""
    keep_params: tuple[str, ...] = ()
    """Query parameter names (``NAME`` or a prefix ``NAME*``) the canonical form keeps
    although they are tracking parameters (``courtly.url.params``); wins over a drop."""
    drop_params: tuple[str, ...] = ()
    """More query parameter names (or prefixes ``NAME*``) the canonical form drops."""
    max_queued_per_host: int | None = 100_000
    max_requests_per_host: int | None = None
    max_attempts: int = 3
    """Attempts at one page URL whose fetch fails in a retryable way (no response, an
    interrupted body, 5xx, 429) before it is catalogued as failed (courtly.frontier.retry)."""
    connect_timeout_s: float = 10.0
    total_timeout_s: float = 30.0
    max_body_bytes: int = 10 * 1024 * 1024
    robots_ttl_s: float = 86_400.0
    follow_sitemaps: bool = True
    store: StoreKind | str = "sqlite"
    """``sqlite`` (in ``state_dir``), ``memory``, or a shared Redis frontier:
    ``redis://[USER:PASS@]HOST:PORT[/DB]`` or
    ``redis+cluster://[USER:PASS@]HOST:PORT[,HOST:PORT...]``."""
    crawl_name: str | None = None
    """Names a crawl in a shared (Redis) store: every process with the same store and
    name joins that crawl. Required with a Redis store."""
    durability: Literal["crash", "power"] = "crash"
    """``crash``: every step is committed (no fsync) by the end of the event loop's pass
    that made it (the steps of one pass share a commit): after ``kill -9`` only the
    requests in flight repeat, and the completions of the pass the kill cut short; a
    power cut may repeat the last moments' fetches.
    ``power``: commits are batched every 0.2 s and fsynced: a power cut loses nothing
    committed, and a crash repeats up to 0.2 s of completed fetches."""
    lease_ttl_s: float = 120.0
    progress_interval_s: float = 2.0
    """Seconds between progress updates (and ``status.json`` writes); at least 0.1."""
    warc_gzip_level: int = 2
    """WARC gzip level: 0-3 ISA-L (fast; 2 is its default), 4-9 zlib (smaller, slower)."""
    stop_grace_s: float = 5.0
    """After a stop (signal, ``max_time_s``, ``max_pages``), requests still in flight are
    abandoned after this long: a ``max_time_s`` crawl ends within ``max_time_s +
    stop_grace_s`` of its start."""
    recrawl: bool = False
    """Keep going: every fetched URL gets a next due time and is fetched again
    (conditionally) when due; the crawl then ends only by a signal or ``max_time_s``
    (docs/recrawl.md). Every store; partitioned crawls too (each partition revisits its
    own hosts)."""
    recrawl_share: float = 0.5
    """While discovery work is queued, revisits take at most this share of the fetches."""
    recrawl_min_interval_s: float = 3_600.0
    """Shortest revisit interval of a URL (and the least time from a fetch to its revisit)."""
    recrawl_max_interval_s: float = 30 * 86_400.0
    """Longest revisit interval: even a page that never changes is fetched this often."""
    news: tuple[str, ...] = ()
    """Regexes of news pages (hubs, feeds): their own revisit lane, front-queue level 0 and
    a lower floor (``news_min_interval_s``). Pages that keep hitting the ordinary floor
    join the lane by themselves."""
    news_min_interval_s: float | None = None
    """Shortest revisit interval in the news lane; ``None``: a quarter of
    ``recrawl_min_interval_s`` (15 minutes by default)."""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    """Unknown TOML keys, kept so they can be reported."""

    def __post_init__(self) -> None:
        for spec in fields(self):
            if spec.name in _CHECKED:
                value = check_setting(spec.name, getattr(self, spec.name), flag_name(spec.name))
                object.__setattr__(self, spec.name, value)
        check_user_agent(self.user_agent)
        check_seeds(self.seeds)
        if self.max_delay_s < self.min_delay_s:
            raise ConfigError(
                f"--max-delay ({self.max_delay_s:.12g} s) must not be below "
                f"--min-delay ({self.min_delay_s:.12g} s)"
            )
        if self.store not in ("sqlite", "memory") and not is_redis_url(self.store):
            raise ConfigError(
                f"--store must be sqlite, memory or a redis:// URL, not {self.store!r}"
            )
        if is_redis_url(self.store) and not self.crawl_name:
            raise ConfigError("a Redis store needs a crawl name (--crawl-name NAME)")
        if is_redis_url(self.store) and self.crawl_name:
            check_crawl_name(self.crawl_name)
        if is_redis_url(self.store) and self.processes > 1:
            raise ConfigError(
                "with a Redis store, start one courtly crawl per process (--processes 1): "
                "they join the same crawl"
            )
        if self.recrawl_max_interval_s < self.recrawl_min_interval_s:
            raise ConfigError(
                f"--recrawl-max-interval ({self.recrawl_max_interval_s:.12g} s) must not be below "
                f"--recrawl-min-interval ({self.recrawl_min_interval_s:.12g} s)"
            )
        for flag, patterns in (
            ("--news", self.news),
            ("--include", self.include),
            ("--exclude", self.exclude),
        ):
            for pattern in patterns:
                _check_regex(flag, pattern)

    def param_policy(self) -> ParamPolicy:
        """The tracking-parameter policy: the default list adjusted by ``keep_params`` and
        ``drop_params``."""
        return DEFAULT_PARAMS.adjusted(keep=self.keep_params, drop=self.drop_params)

    def effective_back_queues(self) -> int:
        """``back_queues``, or the default described on the field."""
        return self.back_queues if self.back_queues is not None else DEFAULT_BACK_QUEUES

    def identity(self) -> dict[str, object]:
        """The settings that shape a crawl's results, for reporting a changed configuration."""
        skip = {
            "max_time_s",
            "max_pages",
            "progress_interval_s",
            "stop_grace_s",
            "extra",
            "state_dir",
        }
        out: dict[str, object] = {}
        for spec in fields(self):
            if spec.name in skip:
                continue
            value = getattr(self, spec.name)
            if spec.name == "store" and isinstance(value, str):
                value = shown(value)  # stored, logged and shown: never a password
            out[spec.name] = str(value) if isinstance(value, Path) else value
            if isinstance(value, tuple):
                out[spec.name] = list(value)
        return out

    def with_overrides(self, **changes: Any) -> CrawlConfig:
        """A copy with the given fields replaced (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def _check_regex(flag: str, pattern: str) -> None:
    """Refuse (:class:`ConfigError`) a ``pattern`` given to ``flag`` that is not a regular
    expression; one written as a shell glob (``*.pdf``) gets the regex it meant."""
    try:
        re.compile(pattern)
    except re.error as error:
        hint = ""
        if "*" in pattern:
            meant = ".*".join(re.escape(part) for part in pattern.split("*"))
            hint = f" (a regular expression, not a shell glob: {flag} {shlex.quote(meant)}?)"
        raise ConfigError(f"bad {flag} regex {pattern!r}: {error}{hint}") from None
