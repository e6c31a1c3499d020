"""Crawl configuration: one frozen dataclass, loaded from flags or a TOML file.

Every field has a unit in its name where it has one. :func:`load_toml` reads a
file whose keys are the field names (or the CLI flag names with ``-``); flags
given on the command line override the file.

Every value is checked (:func:`check_setting`, from ``CrawlConfig.__post_init__``
and from :func:`load_toml`): its type, that a number is finite and in range, that
a choice is one of its values; the message names the setting as the user wrote
it (``--max-time``, or ``max-time in crawl.toml``) and says what is expected.
Modules: :mod:`~courtly.config.crawl_config` (the dataclass),
:mod:`~courtly.config.settings` (what each setting accepts), :mod:`~courtly.config.inputs`
(seeds, User-Agent) and :mod:`~courtly.config.toml_file` (the file).
"""

from __future__ import annotations

from courtly.config.crawl_config import DEFAULT_BACK_QUEUES, CrawlConfig, ScopeMode, StoreKind
from courtly.config.inputs import check_seeds, check_user_agent, shorten
from courtly.config.settings import check_setting, flag_name
from courtly.config.toml_file import load_toml, read_seeds_file

__all__ = [
    "DEFAULT_BACK_QUEUES",
    "CrawlConfig",
    "ScopeMode",
    "StoreKind",
    "check_seeds",
    "check_setting",
    "check_user_agent",
    "flag_name",
    "load_toml",
    "read_seeds_file",
    "shorten",
]
