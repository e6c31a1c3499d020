"""Crawl configuration: one frozen dataclass, loaded from flags or a TOML file.

Every field has a unit in its name where it has one. :func:`load_toml` reads a
file whose keys are the field names (or the CLI flag names with ``-``); flags
given on the command line override the file.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from courtly.errors import ConfigError

__all__ = ["CrawlConfig", "check_user_agent", "load_toml"]

ScopeMode = Literal["host", "domain", "any"]
StoreKind = Literal["sqlite", "memory"]

_CONTACT_RE = re.compile(
    r"(https?://[^\s;()]+|mailto:[^\s;()]+|[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,})"
)
_TOKEN_RE = re.compile(r"^[A-Za-z_-]+(/[^\s]+)?(\s|$)")
DEFAULT_BACK_QUEUES = 10_000
"""Default cap on hosts holding a back-queue slot (``CrawlConfig.back_queues``)."""


def check_user_agent(user_agent: str) -> str:
    """Return ``user_agent`` if it identifies us honestly, else raise :class:`ConfigError`.

    Honest means: it starts with a product token (letters, ``_``, ``-``;
    optionally ``/version``), as RFC 9309 matches on, and carries a contact, a
    URL or an e-mail address, so that a site owner can reach the operator.
    """
    text = user_agent.strip()
    if not _TOKEN_RE.match(text):
        raise ConfigError(
            f"User-Agent {user_agent!r} must start with a product token such as 'mybot/1.0'"
        )
    if not _CONTACT_RE.search(text):
        raise ConfigError(
            f"User-Agent {user_agent!r} carries no contact: add a URL or an e-mail address, "
            "e.g. 'mybot/1.0 (+https://example.org/bot; ops@example.org)'"
        )
    return text


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
    max_queued_per_host: int | None = 100_000
    max_requests_per_host: int | None = None
    connect_timeout_s: float = 10.0
    total_timeout_s: float = 30.0
    max_body_bytes: int = 10 * 1024 * 1024
    robots_ttl_s: float = 86_400.0
    follow_sitemaps: bool = True
    store: StoreKind = "sqlite"
    durability: Literal["crash", "power"] = "crash"
    """``crash``: every step commits at once (no fsync): after ``kill -9`` only the
    requests in flight repeat; a power cut may repeat the last moments' fetches.
    ``power``: commits are batched every 0.2 s and fsynced: a power cut loses nothing
    committed, and a crash repeats up to 0.2 s of completed fetches."""
    lease_ttl_s: float = 120.0
    progress_interval_s: float = 2.0
    warc_gzip_level: int = 2
    """WARC gzip level: 0-3 ISA-L (fast; 2 is its default), 4-9 zlib (smaller, slower)."""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    """Unknown TOML keys, kept so they can be reported."""

    def __post_init__(self) -> None:
        check_user_agent(self.user_agent)
        if self.concurrency is not None and self.concurrency < 1:
            raise ConfigError("concurrency must be >= 1")
        if self.per_ip < 1:
            raise ConfigError("per_ip must be >= 1")
        if self.processes < 1:
            raise ConfigError("processes must be >= 1")
        if self.back_queues is not None and self.back_queues < 1:
            raise ConfigError("back_queues must be >= 1")
        if self.min_delay_s < 0 or self.max_delay_s < self.min_delay_s:
            raise ConfigError("need 0 <= min_delay_s <= max_delay_s")
        if self.delay_factor < 0:
            raise ConfigError("delay_factor must be >= 0")
        if self.scope not in ("host", "domain", "any"):
            raise ConfigError(f"scope must be host, domain or any, not {self.scope!r}")
        if self.host_key not in ("host", "domain"):
            raise ConfigError(f"host_key must be host or domain, not {self.host_key!r}")
        if self.durability not in ("crash", "power"):
            raise ConfigError(f"durability must be crash or power, not {self.durability!r}")
        if self.store not in ("sqlite", "memory"):
            raise ConfigError(f"store must be sqlite or memory, not {self.store!r}")
        for pattern in (*self.include, *self.exclude):
            try:
                re.compile(pattern)
            except re.error as error:
                raise ConfigError(f"bad regex {pattern!r}: {error}") from None

    def effective_back_queues(self) -> int:
        """``back_queues``, or the default described on the field."""
        return self.back_queues if self.back_queues is not None else DEFAULT_BACK_QUEUES

    def identity(self) -> dict[str, object]:
        """The settings that shape a crawl's results, for reporting a changed configuration."""
        skip = {"max_time_s", "max_pages", "progress_interval_s", "extra", "state_dir"}
        out: dict[str, object] = {}
        for spec in fields(self):
            if spec.name in skip:
                continue
            value = getattr(self, spec.name)
            out[spec.name] = str(value) if isinstance(value, Path) else value
            if isinstance(value, tuple):
                out[spec.name] = list(value)
        return out

    def with_overrides(self, **changes: Any) -> CrawlConfig:
        """A copy with the given fields replaced (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


_FIELD_NAMES = {spec.name for spec in fields(CrawlConfig)} - {"extra"}
_ALIASES = {
    "min_delay": "min_delay_s",
    "max_delay": "max_delay_s",
    "max_time": "max_time_s",
    "state": "state_dir",
    "seeds_file": "seeds_file",
}


def load_toml(path: Path) -> dict[str, Any]:
    """Read a TOML config file into field-name keys (flag spellings accepted).

    Keys may sit at the top level or in a ``[crawl]`` table. Returns a dict
    suitable for ``CrawlConfig(**...)`` after merging with flags; unknown keys
    raise :class:`ConfigError`.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"cannot read config file {path}: {error}") from None
    table = data.get("crawl", data)
    if not isinstance(table, dict):
        raise ConfigError("the [crawl] entry must be a table")
    out: dict[str, Any] = {}
    for raw_key, value in table.items():
        key = raw_key.replace("-", "_")
        key = _ALIASES.get(key, key)
        if key == "seeds_file":
            out["seeds"] = tuple(out.get("seeds", ())) + tuple(read_seeds_file(Path(value)))
            continue
        if key not in _FIELD_NAMES:
            raise ConfigError(f"unknown setting {raw_key!r} in {path}")
        if key in ("seeds", "include", "exclude"):
            value = tuple(value)
        if key in ("state_dir", "hosts_file"):
            value = Path(value)
        out[key] = value
    return out


def read_seeds_file(path: Path) -> list[str]:
    """One URL per line; blank lines and ``#`` comments ignored."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise ConfigError(f"cannot read seeds file {path}: {error}") from None
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
