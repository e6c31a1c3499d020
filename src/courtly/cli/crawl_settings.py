"""``courtly crawl``'s settings merged into one :class:`~courtly.config.CrawlConfig`."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from courtly.config import CrawlConfig, load_toml, read_seeds_file
from courtly.parallel import default_processes
from courtly.store.redis.address import is_redis_url

__all__ = ["build_config"]


def build_config(
    seeds: tuple[str, ...],
    config_file: Path | None,
    seeds_files: Sequence[Path],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    no_sitemaps: bool,
    flags: dict[str, Any],
) -> CrawlConfig:
    """The crawl's config: the ``--config`` file, then each ``--seeds-file`` (``-``: standard
    input) and the seeds given,
    then every flag given (flags win); ``--processes`` left out defaults to
    :func:`courtly.parallel.default_processes`. Raises :class:`click.UsageError` for a
    missing ``--state`` or ``--user-agent``, :class:`ConfigError` for a bad value."""
    values: dict[str, Any] = load_toml(config_file) if config_file is not None else {}
    all_seeds = list(values.get("seeds", ()))
    for seeds_file in seeds_files:
        all_seeds.extend(read_seeds_file(seeds_file, stdin=sys.stdin.buffer))
    all_seeds.extend(seeds)
    values["seeds"] = tuple(dict.fromkeys(all_seeds))
    if include:
        values["include"] = include
    if exclude:
        values["exclude"] = exclude
    if no_sitemaps:
        values["follow_sitemaps"] = False
    for key, value in flags.items():
        if value is not None and value != ():  # an unused repeatable flag keeps the file's
            values[key] = value
    if "state_dir" not in values:
        raise click.UsageError("--state DIR is required (or state in the config file)")
    if "user_agent" not in values:
        raise click.UsageError(
            "--user-agent is required: a product token and a contact, "
            "e.g. 'mybot/1.0 (+https://example.org/bot)'"
        )
    config = CrawlConfig(**values)
    if "processes" not in values and not is_redis_url(config.store):
        processes = default_processes(config.state_dir, config.per_ip)
        config = dataclasses.replace(config, processes=processes)
    return config
