"""The arguments and flags of ``courtly crawl`` (a contract: names, types, help text).

Each flag has a TOML twin (:func:`courtly.config.load_toml`); ``None`` means "not given",
so a flag left out keeps the config file's value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

__all__ = ["crawl_options"]

F = TypeVar("F", bound=Callable[..., Any])

_DECORATORS: list[Callable[[Any], Any]] = [
    click.argument("seeds", nargs=-1),
    click.option(
        "--config",
        "config_file",
        type=click.Path(path_type=Path, dir_okay=False),
        help="TOML file with the same settings as the flags (flags win).",
    ),
    click.option(
        "--seeds-file",
        type=click.Path(path_type=Path, dir_okay=False),
        multiple=True,
        help="One seed URL per line (# comments allowed); - reads standard input; repeatable: "
        "every file's seeds.",
    ),
    click.option(
        "--state",
        "state_dir",
        type=click.Path(path_type=Path, file_okay=False),
        help="[required, or `state` in --config] State directory: frontier, catalogue, WARC. "
        "Reused = resumed.",
    ),
    click.option(
        "--user-agent",
        help="[required, or `user-agent` in --config] Product token plus a contact URL or e-mail.",
    ),
    click.option(
        "--min-delay", "min_delay_s", type=float, help="Least gap per host, seconds [1.0]."
    ),
    click.option("--delay-factor", type=float, help="Gap >= K x last fetch time [2.0]."),
    click.option(
        "--max-delay", "max_delay_s", type=float, help="Cap on the two above, seconds [60]."
    ),
    click.option(
        "--max-time",
        "max_time_s",
        type=float,
        help="Stop after S seconds (the crawl ends within S + --stop-grace).",
    ),
    click.option("--max-pages", type=int, help="Stop after N fetched pages."),
    click.option(
        "--stop-grace",
        "stop_grace_s",
        type=float,
        help="After a stop, abandon requests still in flight after S seconds [5].",
    ),
    click.option(
        "--concurrency",
        type=int,
        help="Requests in flight per process, each to its own host "
        "[auto: 8..1024, by CPU use and event-loop lag].",
    ),
    click.option("--per-ip", type=int, help="Requests in flight per resolved IP [2]."),
    click.option(
        "--processes",
        type=int,
        help="Crawler processes, hosts partitioned by hash [the cores available, at most --per-ip; "
        "a resume keeps the number it was started with].",
    ),
    click.option("--timeout", "total_timeout_s", type=float, help="Whole exchange, seconds [30]."),
    click.option(
        "--connect-timeout", "connect_timeout_s", type=float, help="Connect, seconds [10]."
    ),
    click.option("--max-body", "max_body_bytes", type=int, help="Body cap, bytes [10 MiB]."),
    click.option(
        "--back-queues",
        type=int,
        help="Cap on hosts holding a back-queue slot at once; the number in use follows demand "
        "[10000].",
    ),
    click.option(
        "--hosts-file",
        type=click.Path(path_type=Path, dir_okay=False),
        help="/etc/hosts-format overrides for DNS.",
    ),
    click.option(
        "--allow-private-networks",
        is_flag=True,
        default=None,
        help="Allow loopback/private targets (needed for the sandbox web).",
    ),
    click.option(
        "--no-verify-tls",
        "verify_tls",
        is_flag=True,
        flag_value=False,
        default=None,
        help="Fetch from https servers whose certificate does not check out (expired, "
        "self-signed, another name).",
    ),
    click.option(
        "--scope",
        type=click.Choice(["host", "domain", "any"]),
        help="Stay on the seeds' hosts, registered domains [domain], or go anywhere; a "
        "seed's redirect target is a seed.",
    ),
    click.option(
        "--host-key",
        type=click.Choice(["host", "domain"]),
        help="Politeness unit: each host [host] or each registered domain.",
    ),
    click.option("--include", multiple=True, help="Regex a URL must match (repeatable)."),
    click.option("--exclude", multiple=True, help="Regex that excludes a URL (repeatable)."),
    click.option("--max-depth", type=int, help="Follow links at most N hops from a seed."),
    click.option(
        "--keep-param",
        "keep_params",
        multiple=True,
        help="Keep this query parameter (or prefix NAME*) although it is a tracking one "
        "(repeatable; see docs/urls.md).",
    ),
    click.option(
        "--drop-param",
        "drop_params",
        multiple=True,
        help="Drop this query parameter (or prefix NAME*) from every URL, as the tracking "
        "ones are (repeatable).",
    ),
    click.option("--max-requests-per-host", type=int, help="Request budget of one host."),
    click.option(
        "--max-attempts",
        type=int,
        help="Attempts at a page whose fetch fails (no response, 5xx, 429) [3].",
    ),
    click.option("--max-queued-per-host", type=int, help="Queue cap of one host [100000]."),
    click.option(
        "--store",
        help="Frontier backend: sqlite [default], memory (nothing kept after exit), or a shared "
        "Redis: redis://[USER:PASS@]HOST:PORT[/DB] or "
        "redis+cluster://[USER:PASS@]HOST:PORT[,HOST:PORT...].",
    ),
    click.option(
        "--crawl-name",
        help="The crawl's name in a Redis store: processes with the same store and name join it.",
    ),
    click.option(
        "--durability",
        type=click.Choice(["crash", "power"]),
        help="crash [default]: commit every step (those of one event-loop pass together), only "
        "in-flight requests repeat after kill -9; "
        "power: batched fsynced commits that also survive a power cut.",
    ),
    click.option("--no-sitemaps", is_flag=True, default=False, help="Ignore robots.txt Sitemaps."),
    click.option(
        "--recrawl",
        is_flag=True,
        default=None,
        help="Keep going: revisit fetched pages when due, with conditional GET; ends only by "
        "a signal or --max-time (any store, partitioned or not; docs/recrawl.md).",
    ),
    click.option(
        "--recrawl-share",
        type=float,
        help="Most of the fetches revisits take while discovery work is queued, 0..1 [0.5].",
    ),
    click.option(
        "--recrawl-min-interval",
        "recrawl_min_interval_s",
        type=float,
        help="Shortest revisit interval of a URL, seconds [3600].",
    ),
    click.option(
        "--news",
        multiple=True,
        help="Regex of news pages (repeatable): their own revisit lane, first in the front "
        "queues, with a lower floor (--news-min-interval).",
    ),
    click.option(
        "--news-min-interval",
        "news_min_interval_s",
        type=float,
        help="Shortest revisit interval of a news page, seconds "
        "[a quarter of --recrawl-min-interval].",
    ),
    click.option(
        "--recrawl-max-interval",
        "recrawl_max_interval_s",
        type=float,
        help="Longest revisit interval, seconds [2592000 = 30 days].",
    ),
    click.option(
        "--progress-interval",
        "progress_interval_s",
        type=float,
        help="Seconds between progress updates, at least 0.1 [2].",
    ),
    click.option(
        "--summary-json",
        type=click.Path(path_type=Path, dir_okay=False),
        help="Write the final summary (or the refusal) to FILE as JSON, exit code included.",
    ),
    click.option(
        "--dashboard",
        "dashboard_at",
        metavar="[HOST:]PORT",
        help="Serve the live dashboard, /metrics and /api/* there (host 127.0.0.1; port 0: any).",
    ),
    click.option(
        "--dashboard-token",
        help="Token the dashboard asks for (required for a HOST other than loopback).",
    ),
    click.option(
        "-v", "--verbose", count=True, help="More on stderr: -v a line per URL, -vv debug."
    ),
    click.option("-q", "--quiet", is_flag=True, help="Errors only: no progress, no summary."),
]
"""In ``--help`` order (the first is the outermost decorator)."""


def crawl_options(function: F) -> F:
    """``function`` with every argument and flag of ``courtly crawl``."""
    result: F = functools.reduce(lambda f, decorate: decorate(f), reversed(_DECORATORS), function)
    return result
