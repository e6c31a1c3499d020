"""What each setting accepts, and the one check every value goes through
(:func:`check_setting`, from ``CrawlConfig.__post_init__`` and from the TOML loader): its
type, that a number is finite and in range, that a choice is one of its values; the
message names the setting as the user wrote it (``--max-time``, or ``max-time in
crawl.toml``) and says what is expected."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from courtly.errors import ConfigError
from courtly.url.params import check_param_name

__all__ = ["check_setting", "checked_settings", "flag_name"]


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
    "verify_tls": _Rule("bool"),
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


def checked_settings() -> frozenset[str]:
    """The names of the settings :func:`check_setting` checks."""
    return frozenset(_RULES)
