"""``courtly crawl``: check the input, crawl, summarise, exit with the outcome's code."""

from __future__ import annotations

import dataclasses
import logging
import sys
from pathlib import Path
from typing import Any

import click

from courtly.cli.crawl_options import crawl_options
from courtly.cli.crawl_run import run_crawl
from courtly.cli.crawl_settings import build_config
from courtly.cli.failures import expected_errors, write_json
from courtly.config import CrawlConfig
from courtly.crawl import CrawlSnapshot
from courtly.event_loop import run_async
from courtly.exit_codes import ExitCode, exit_code_for, stop_reason_words
from courtly.fetch.hosts import check_hosts_file
from courtly.observe.command import dashboard_spec
from courtly.progress import LogProgress, RichProgress, progress_for
from courtly.state_dir import check_crawl_target, check_writable
from courtly.store.redis.address import check_store_url, is_redis_url, shown

__all__ = ["crawl"]

log = logging.getLogger("courtly.crawl")


@click.command()
@crawl_options
def crawl(
    seeds: tuple[str, ...],
    dashboard_at: str | None,
    dashboard_token: str | None,
    config_file: Path | None,
    seeds_file: tuple[Path, ...],
    verbose: int,
    quiet: bool,
    summary_json: Path | None,
    no_sitemaps: bool,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    **flags: Any,
) -> None:
    """Crawl SEED... politely, writing WARC and a catalogue to --state DIR.

    Exit codes: 0 done, 1 failed, 2 refused input (nothing written), 3 stopped by
    --max-time/--max-pages, 4 stopped by a signal, 5 nothing fetched.
    """
    if summary_json is not None:
        with expected_errors():
            check_writable(summary_json.parent, "the directory of --summary-json", must_exist=True)
    with expected_errors(summary_json):
        spec = dashboard_spec(dashboard_at, dashboard_token)
        if spec is not None and flags.get("progress_interval_s") is None:
            flags["progress_interval_s"] = 1.0  # the dashboard's history is at 1 Hz
        config = build_config(seeds, config_file, seeds_file, include, exclude, no_sitemaps, flags)
        check_crawl_target(config)
        if is_redis_url(config.store):
            check_store_url(config.store)  # a URL the client would refuse, refused now
        skipped = [] if config.hosts_file is None else check_hosts_file(config.hosts_file)
    progress = None
    if not quiet:
        progress = progress_for(
            summary_on_close=False,
            catalogue_kept=config.store != "memory",
            export=_export_command(config),
        )
    _setup_logging(verbose, quiet, progress)
    for line in skipped:
        log.warning("--hosts-file %s %s: ignored", config.hosts_file, line)
    if config.crawl_name and not is_redis_url(config.store):
        log.warning(
            "--crawl-name %s: only a Redis store (--store redis://...) uses a crawl name; "
            "ignored with --store %s",
            config.crawl_name,
            config.store,
        )
    with expected_errors(summary_json):
        snapshot = run_async(run_crawl(config, progress, spec))
    code = exit_code_for(snapshot)
    if summary_json is not None:  # first: the terminal may be gone (a hangup)
        write_json(summary_json, _summary_data(snapshot, code, config))
    if progress is not None:  # a progress whose terminal is gone says nothing more
        progress.summary(snapshot)
        if code is ExitCode.NOTHING_FETCHED:
            progress.notice(_nothing_fetched_hint(snapshot, config))
    sys.exit(code)


def _export_command(config: CrawlConfig) -> str | None:
    """The command that reads a shared (Redis) crawl's whole catalogue; ``None`` for a
    crawl whose catalogue is in its state directory."""
    if not is_redis_url(config.store):
        return None
    return (
        f"courtly export --store {shown(config.store)} --crawl-name {config.crawl_name} "
        "--format jsonl"
    )


def _nothing_fetched_hint(snapshot: CrawlSnapshot, config: CrawlConfig) -> str:
    """Why a run fetched nothing, in words, with the flag that changes it where one does."""
    detail: str | None = getattr(snapshot, "stop_detail", None)
    if detail:
        return f"nothing fetched: {detail}"
    found = {**snapshot.errors, **snapshot.skipped}
    reasons = ", ".join(f"{k}={v}" for k, v in sorted(found.items())) or "no response"
    hint = ""
    if not config.allow_private_networks and found.keys() & _GUARDED:
        hint = (
            "; the address guard blocks private, loopback and link-local targets: "
            "--allow-private-networks allows them"
        )
    examples = snapshot.error_examples
    said = [kind for kind in found if kind in examples]
    if said:  # the commonest error's own words: a count cannot say a certificate was refused
        kind = max(said, key=lambda k: found[k])
        hint += f"; {kind}: {examples[kind]}"
    return f"nothing fetched ({reasons}){hint}"


_GUARDED = frozenset({"blocked", "robots_unreachable", "connect"})
"""Errors that a blocked address also gives (a robots.txt the guard refused is unreachable)."""


def _summary_data(snapshot: CrawlSnapshot, code: ExitCode, config: CrawlConfig) -> dict[str, Any]:
    """The ``--summary-json`` document of a crawl that ran."""
    data = dataclasses.asdict(snapshot)
    data["frontier"] = data.pop("counts")
    data["statuses"] = {str(k): v for k, v in snapshot.statuses.items()}
    data["exit_code"] = int(code)
    data["outcome"] = code.name.lower()
    data["stop_words"] = stop_reason_words(snapshot.stop_reason)
    data.setdefault("stop_detail", None)
    data["config"] = config.identity()
    return data


def _setup_logging(verbose: int, quiet: bool, progress: LogProgress | RichProgress | None) -> None:
    """WARNING by default, ERROR with ``-q``, INFO with ``-v`` (a line per URL), DEBUG ``-vv``.

    On a terminal, log lines go through the panel's console so that it never draws over them.
    """
    level = logging.ERROR if quiet else logging.WARNING
    if verbose:
        level = logging.INFO if verbose == 1 else logging.DEBUG
    handler: logging.Handler
    if isinstance(progress, RichProgress):
        from rich.logging import RichHandler

        handler = RichHandler(console=progress.console, show_path=False, markup=False)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])  # a no-op where logging is set up
