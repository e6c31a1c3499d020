"""A crawl's settings from a TOML file (and a seeds file): the keys are the field names
or the CLI flag names with ``-``; flags given on the command line override the file."""

from __future__ import annotations

import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any, BinaryIO

from courtly.config.crawl_config import CrawlConfig
from courtly.config.settings import check_setting
from courtly.errors import ConfigError

__all__ = ["load_toml", "read_seeds_file"]


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
    ``seeds`` string is one seed). A relative path in the file (``state``,
    ``seeds-file``, ``hosts-file``; ``~`` is the home directory) is relative to the
    file's own directory, so a config file means the same wherever courtly is started
    (a path given as a flag is relative to the working directory, as a shell's is).
    Returns a dict suitable for ``CrawlConfig(**...)`` after merging with flags; unknown
    keys, bad values and one setting under two spellings (``min-delay`` and
    ``min_delay_s``) raise :class:`ConfigError`.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))
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
    spelt: dict[str, str] = {}  # field -> the key that set it
    for raw_key, value in table.items():
        key = raw_key.replace("-", "_")
        key = _ALIASES.get(key, key)
        label = f"{raw_key} in {path}"
        if (first := spelt.setdefault(key, raw_key)) != raw_key:
            raise ConfigError(f"{path}: {first!r} and {raw_key!r} are the same setting: keep one")
        if key == "seeds_file":
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{label} must be a path (a non-empty string)")
            seeds_file = _beside(path, Path(value))
            out["seeds"] = tuple(out.get("seeds", ())) + tuple(read_seeds_file(seeds_file))
            continue
        if key not in _FIELD_NAMES:
            raise ConfigError(f"unknown setting {raw_key!r} in {path}")
        value = check_setting(key, value, label)
        if isinstance(value, Path):
            value = _beside(path, value)
        if key == "seeds":
            value = tuple(out.get("seeds", ())) + value
        out[key] = value
    return out


def _beside(config_file: Path, value: Path) -> Path:
    """``value`` from ``config_file``: home-expanded, then, if relative, relative to the
    file's directory (kept as written when that is the working directory)."""
    value = value.expanduser()
    return value if value.is_absolute() else config_file.parent / value


def read_seeds_file(path: Path, stdin: BinaryIO | None = None) -> list[str]:
    """One URL per line (UTF-8; a byte order mark and CRLF line ends as editors on Windows
    save them are read as without); blank lines and ``#`` comments ignored. ``stdin``, if
    given, is read instead when ``path`` is ``-`` (``--seeds-file -``: seeds piped in)."""
    piped = stdin if str(path) == "-" else None
    try:
        if piped is not None:
            text = piped.read().decode("utf-8-sig")
        else:
            text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        name = "- (standard input)" if piped is not None else str(path)
        raise ConfigError(f"cannot read seeds file {name}: {error}") from None
    lines = text.splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
