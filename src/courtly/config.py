"""Crawl configuration: one frozen dataclass, loaded from flags or a TOML file.

Every field has a unit in its name where it has one. :func:`load_toml` reads a
file whose keys are the field names (or the CLI flag names with ``-``); flags
given on the command line override the file.

Every value is checked (:func:`check_setting`, from ``CrawlConfig.__post_init__``
and from :func:`load_toml`): its type, that a number is finite and in range, that
a choice is one of its values; the message names the setting as the user wrote
it (``--max-time``, or ``max-time in crawl.toml``) and says what is expected.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Final, Literal

from courtly.errors import ConfigError, InvalidURL
from courtly.store.redis.address import is_redis_url
from courtly.url.canonical import canonicalize
from courtly.url.params import DEFAULT_PARAMS, ParamPolicy, check_param_name

__all__ = [
    "CrawlConfig",
    "check_seeds",
    "check_setting",
    "check_user_agent",
    "flag_name",
    "load_toml",
    "read_seeds_file",
    "shorten",
]

ScopeMode = Literal["host", "domain", "any"]
StoreKind = Literal["sqlite", "memory"]

_CONTACT_RE = re.compile(
    r"(https?://[^\s;()]+|mailto:[^\s;()]+|[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,})"
)
_TOKEN_RE = re.compile(r"^[A-Za-z_-]+(/[^\s]+)?(\s|$)")
DEFAULT_BACK_QUEUES = 10_000
"""Default cap on hosts holding a back-queue slot (``CrawlConfig.back_queues``)."""


def shorten(text: str, limit: int = 80) -> str:
    """``repr(text)``, cut to about ``limit`` characters with its full length said."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[: limit - 20]!r}... ({len(text)} characters)"


def check_seeds(seeds: tuple[str, ...] | list[str]) -> None:
    """Raise :class:`ConfigError` listing every seed that is not a crawlable http(s) URL
    (each shortened, with why), so a bad seed is never stored in a state directory."""
    bad: list[str] = []
    for seed in seeds:
        try:
            canonicalize(seed)
        except InvalidURL as error:
            bad.append(f"  {shorten(seed)}: {str(error)[:160]}")
    if bad:
        many = f"{len(bad)} of {len(seeds)} seeds are" if len(seeds) > 1 else "the seed is"
        raise ConfigError(f"{many} not crawlable http(s) URLs:\n" + "\n".join(bad))


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
    ``redis://HOST:PORT[/DB]`` or ``redis+cluster://HOST:PORT[,HOST:PORT...]``."""
    crawl_name: str | None = None
    """Names a crawl in a shared (Redis) store: every process with the same store and
    name joins that crawl. Required with a Redis store."""
    durability: Literal["crash", "power"] = "crash"
    """``crash``: every step commits at once (no fsync): after ``kill -9`` only the
    requests in flight repeat; a power cut may repeat the last moments' fetches.
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
    (docs/recrawl.md). One process, memory or SQLite store."""
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
            if spec.name in _RULES:
                value = check_setting(spec.name, getattr(self, spec.name), flag_name(spec.name))
                object.__setattr__(self, spec.name, value)
        check_user_agent(self.user_agent)
        check_seeds(self.seeds)
        if self.max_delay_s < self.min_delay_s:
            raise ConfigError(
                f"--max-delay ({self.max_delay_s:g} s) must not be below "
                f"--min-delay ({self.min_delay_s:g} s)"
            )
        if self.store not in ("sqlite", "memory") and not is_redis_url(self.store):
            raise ConfigError(
                f"--store must be sqlite, memory or a redis:// URL, not {self.store!r}"
            )
        if is_redis_url(self.store) and not self.crawl_name:
            raise ConfigError("a Redis store needs a crawl name (--crawl-name NAME)")
        if is_redis_url(self.store) and self.processes > 1:
            raise ConfigError(
                "with a Redis store, start one courtly crawl per process (--processes 1): "
                "they join the same crawl"
            )
        if self.recrawl and (is_redis_url(self.store) or self.processes > 1):
            raise ConfigError(
                "--recrawl needs one process (--processes 1) and a memory or SQLite store: "
                "its revisit schedule lives in one process, not yet shared between Redis "
                "fetchers or partitions"
            )
        for pattern in self.news:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ConfigError(f"bad --news regex {pattern!r}: {error}") from None
        if self.recrawl_max_interval_s < self.recrawl_min_interval_s:
            raise ConfigError(
                f"--recrawl-max-interval ({self.recrawl_max_interval_s:g} s) must not be below "
                f"--recrawl-min-interval ({self.recrawl_min_interval_s:g} s)"
            )
        for pattern in (*self.include, *self.exclude):
            try:
                re.compile(pattern)
            except re.error as error:
                raise ConfigError(f"bad regex {pattern!r}: {error}") from None

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
            out[spec.name] = str(value) if isinstance(value, Path) else value
            if isinstance(value, tuple):
                out[spec.name] = list(value)
        return out

    def with_overrides(self, **changes: Any) -> CrawlConfig:
        """A copy with the given fields replaced (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


@dataclass(frozen=True, slots=True)
class _Rule:
    """What one setting accepts. ``low``/``high`` bound numbers (``above``: strictly)."""

    kind: Literal["seconds", "number", "count", "bool", "text", "path", "list", "params", "choice"]
    low: float | None = None
    above: bool = False
    high: float | None = None
    optional: bool = False
    choices: tuple[str, ...] = ()


_MAX_SECONDS: Final = 1e9
"""No duration may exceed this (about 31 years): longer waits overflow the event loop."""
_RULES: Final[dict[str, _Rule]] = {
    "state_dir": _Rule("path"),
    "user_agent": _Rule("text"),
    "seeds": _Rule("list"),
    "min_delay_s": _Rule("seconds", low=0.0),
    "delay_factor": _Rule("number", low=0.0, high=1000.0),
    "max_delay_s": _Rule("seconds", low=0.0),
    "max_time_s": _Rule("seconds", low=0.0, above=True, optional=True),
    "max_pages": _Rule("count", low=1, optional=True),
    "concurrency": _Rule("count", low=1, high=10_000, optional=True),
    "per_ip": _Rule("count", low=1, high=10_000),
    "processes": _Rule("count", low=1, high=256),
    "back_queues": _Rule("count", low=1, high=10_000_000, optional=True),
    "hosts_file": _Rule("path", optional=True),
    "allow_private_networks": _Rule("bool"),
    "scope": _Rule("choice", choices=("host", "domain", "any")),
    "host_key": _Rule("choice", choices=("host", "domain")),
    "include": _Rule("list"),
    "exclude": _Rule("list"),
    "news": _Rule("list"),
    "max_depth": _Rule("count", low=0, optional=True),
    "keep_params": _Rule("params"),
    "drop_params": _Rule("params"),
    "max_queued_per_host": _Rule("count", low=1, optional=True),
    "max_requests_per_host": _Rule("count", low=1, optional=True),
    "max_attempts": _Rule("count", low=1, high=100),
    "connect_timeout_s": _Rule("seconds", low=0.0, above=True),
    "total_timeout_s": _Rule("seconds", low=0.0, above=True),
    "max_body_bytes": _Rule("count", low=1),
    "robots_ttl_s": _Rule("seconds", low=0.0, above=True),
    "follow_sitemaps": _Rule("bool"),
    "store": _Rule("text"),
    "crawl_name": _Rule("text", optional=True),
    "durability": _Rule("choice", choices=("crash", "power")),
    "lease_ttl_s": _Rule("seconds", low=0.0, above=True),
    "progress_interval_s": _Rule("seconds", low=0.1),
    "warc_gzip_level": _Rule("count", low=0, high=9),
    "stop_grace_s": _Rule("seconds", low=0.0),
    "recrawl": _Rule("bool"),
    "recrawl_share": _Rule("number", low=0.0, high=1.0),
    "recrawl_min_interval_s": _Rule("seconds", low=0.0, above=True),
    "recrawl_max_interval_s": _Rule("seconds", low=0.0, above=True),
    "news_min_interval_s": _Rule("seconds", low=0.0, above=True, optional=True),
}
_FLAGS: Final = {
    "state_dir": "--state",
    "seeds": "SEED",
    "min_delay_s": "--min-delay",
    "max_delay_s": "--max-delay",
    "max_time_s": "--max-time",
    "connect_timeout_s": "--connect-timeout",
    "total_timeout_s": "--timeout",
    "max_body_bytes": "--max-body",
    "progress_interval_s": "--progress-interval",
    "stop_grace_s": "--stop-grace",
    "follow_sitemaps": "--no-sitemaps",
    "robots_ttl_s": "robots-ttl",
    "lease_ttl_s": "lease-ttl",
    "warc_gzip_level": "warc-gzip-level",
    "recrawl_min_interval_s": "--recrawl-min-interval",
    "recrawl_max_interval_s": "--recrawl-max-interval",
    "news_min_interval_s": "--news-min-interval",
    "keep_params": "--keep-param",
    "drop_params": "--drop-param",
}


def flag_name(name: str) -> str:
    """The command-line spelling of the setting ``name`` (``max_time_s`` -> ``--max-time``);
    settings without a flag are named by their config-file key."""
    return _FLAGS.get(name, "--" + name.replace("_", "-"))


def _number_text(rule: _Rule) -> str:
    unit = {"seconds": "a number of seconds", "number": "a number", "count": "a whole number"}
    text = unit[rule.kind]
    low, high = rule.low, rule.high
    if low is not None and high is not None:
        return f"{text} from {_num(low)} to {_num(high)}"
    if low is not None:
        return f"{text} {'>' if rule.above else '>='} {_num(low)}"
    return text


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_setting(name: str, value: Any, label: str) -> Any:
    """Return ``value`` checked (and normalised) for the setting ``name``, or raise
    :class:`ConfigError` naming it as ``label``.

    Numbers must be finite and within the setting's range (an ``int`` is accepted
    for seconds and converted); a count must be a whole number; a list may be given
    as one string (a one-element list); paths may be strings. ``None`` is accepted
    for optional settings only. Unknown names are returned unchecked.
    """
    rule = _RULES.get(name)
    if rule is None:
        return value
    if value is None:
        if rule.optional:
            return None
        raise ConfigError(f"{label} is required")
    kind = rule.kind
    if kind in ("seconds", "number", "count"):
        return _check_number(rule, value, label)
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{label} must be true or false, not {_shown(value)}")
        return value
    if kind == "text":
        if not isinstance(value, str):
            raise ConfigError(f"{label} must be a string, not {_shown(value)}")
        return value
    if kind == "path":
        if isinstance(value, str) and value:
            return Path(value)
        if isinstance(value, Path):
            return value
        raise ConfigError(f"{label} must be a path (a non-empty string), not {_shown(value)}")
    if kind in ("list", "params"):
        if isinstance(value, str):
            value = (value,)
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{label} must be a list of strings, not {_shown(value)}")
        if kind == "params":
            try:
                return tuple(dict.fromkeys(check_param_name(v) for v in value))
            except ValueError as error:
                raise ConfigError(f"{label}: {error}") from None
        return tuple(value)
    if value not in rule.choices:
        raise ConfigError(f"{label} must be one of {', '.join(rule.choices)}, not {_shown(value)}")
    return value


def _check_number(rule: _Rule, value: Any, label: str) -> float | int:
    expected = _number_text(rule)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{label} must be {expected}, not {_shown(value)}")
    number: float | int
    if rule.kind == "count":
        if not isinstance(value, int) and not (math.isfinite(value) and value.is_integer()):
            raise ConfigError(f"{label} must be {expected}, not {_shown(value)}")
        number = int(value)
    else:
        number = float(value)
        if not math.isfinite(number):
            raise ConfigError(f"{label} must be {expected}, not {number}")
    high = _MAX_SECONDS if rule.high is None and rule.kind == "seconds" else rule.high
    low = rule.low
    too_low = low is not None and (number <= low if rule.above else number < low)
    if too_low or (high is not None and number > high):
        raise ConfigError(f"{label} must be {expected}, not {number:g}")
    return number


_FIELD_NAMES = {spec.name for spec in fields(CrawlConfig)} - {"extra"}
_ALIASES = {
    "min_delay": "min_delay_s",
    "max_delay": "max_delay_s",
    "max_time": "max_time_s",
    "state": "state_dir",
    "seeds_file": "seeds_file",
    "timeout": "total_timeout_s",
    "connect_timeout": "connect_timeout_s",
    "max_body": "max_body_bytes",
    "progress_interval": "progress_interval_s",
    "stop_grace": "stop_grace_s",
    "robots_ttl": "robots_ttl_s",
    "lease_ttl": "lease_ttl_s",
    "recrawl_min_interval": "recrawl_min_interval_s",
    "recrawl_max_interval": "recrawl_max_interval_s",
    "news_min_interval": "news_min_interval_s",
    "keep_param": "keep_params",
    "drop_param": "drop_params",
}


def load_toml(path: Path) -> dict[str, Any]:
    """Read a TOML config file into field-name keys (flag spellings accepted).

    Keys sit at the top level or, all of them, in a ``[crawl]`` table (then no other
    top-level key is allowed). Every value is checked (:func:`check_setting`; a
    ``seeds`` string is one seed). Returns a dict suitable for ``CrawlConfig(**...)``
    after merging with flags; unknown keys and bad values raise :class:`ConfigError`.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"cannot read config file {path}: {error}") from None
    table = data.get("crawl", data)
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: the crawl entry must be a [crawl] table")
    if "crawl" in data and len(data) > 1:
        others = ", ".join(repr(k) for k in data if k != "crawl")
        raise ConfigError(
            f"{path}: top-level {others} beside the [crawl] table: put every setting "
            "inside [crawl] (or drop the [crawl] header)"
        )
    out: dict[str, Any] = {}
    for raw_key, value in table.items():
        key = raw_key.replace("-", "_")
        key = _ALIASES.get(key, key)
        label = f"{raw_key} in {path}"
        if key == "seeds_file":
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{label} must be a path (a non-empty string)")
            out["seeds"] = tuple(out.get("seeds", ())) + tuple(read_seeds_file(Path(value)))
            continue
        if key not in _FIELD_NAMES:
            raise ConfigError(f"unknown setting {raw_key!r} in {path}")
        value = check_setting(key, value, label)
        if key == "seeds":
            value = tuple(out.get("seeds", ())) + value
        out[key] = value
    return out


def read_seeds_file(path: Path) -> list[str]:
    """One URL per line; blank lines and ``#`` comments ignored."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read seeds file {path}: {error}") from None
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
