"""The ``courtly`` command line: thin, arguments -> config -> run.

``courtly crawl``, ``courtly status``, ``courtly export`` and ``courtly sandbox``.
Every crawl flag has a TOML twin (``--config FILE``; flags win over the file).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import click

from courtly import __version__
from courtly.config import CrawlConfig, load_toml, read_seeds_file
from courtly.crawl import STATUS_FILE, Crawler, CrawlSnapshot, open_store
from courtly.errors import CourtlyError, StateError
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import FrontierCounts
from courtly.parallel import (
    PartitionedCrawl,
    claim_layout,
    default_processes,
    merge_counts,
    merge_last_runs,
    state_dirs,
)
from courtly.progress import progress_for
from courtly.sandbox.cli import sandbox

__all__ = ["main", "run_async"]

T = TypeVar("T")


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on uvloop where available, else the default loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


@click.group()
@click.version_option(__version__, prog_name="courtly")
def main() -> None:
    """courtly: a polite, prioritised, resumable web crawler."""


main.add_command(sandbox)


@main.command()
@click.argument("seeds", nargs=-1)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="TOML file with the same settings as the flags (flags win).",
)
@click.option(
    "--seeds-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="One seed URL per line (# comments allowed).",
)
@click.option(
    "--state",
    "state_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="State directory: frontier, catalogue, WARC. Reused = resumed.",
)
@click.option("--user-agent", help="Product token plus a contact URL or e-mail (required).")
@click.option("--min-delay", "min_delay_s", type=float, help="Least gap per host, seconds [1.0].")
@click.option("--delay-factor", type=float, help="Gap >= K x last fetch time [2.0].")
@click.option("--max-delay", "max_delay_s", type=float, help="Cap on the two above, seconds [60].")
@click.option("--max-time", "max_time_s", type=float, help="Stop after S seconds.")
@click.option("--max-pages", type=int, help="Stop after N fetched pages.")
@click.option(
    "--concurrency",
    type=int,
    help="Requests in flight per process, each to its own host "
    "[auto: 8..1024, by CPU use and event-loop lag].",
)
@click.option("--per-ip", type=int, help="Requests in flight per resolved IP [2].")
@click.option(
    "--processes",
    type=int,
    help="Crawler processes, hosts partitioned by hash [the cores available, at most --per-ip; "
    "a resume keeps the number it was started with].",
)
@click.option("--timeout", "total_timeout_s", type=float, help="Whole exchange, seconds [30].")
@click.option("--connect-timeout", "connect_timeout_s", type=float, help="Connect, seconds [10].")
@click.option("--max-body", "max_body_bytes", type=int, help="Body cap, bytes [10 MiB].")
@click.option(
    "--back-queues",
    type=int,
    help="Cap on hosts holding a back-queue slot at once; the number in use follows demand "
    "[10000].",
)
@click.option(
    "--hosts-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="/etc/hosts-format overrides for DNS.",
)
@click.option(
    "--allow-private-networks",
    is_flag=True,
    default=None,
    help="Allow loopback/private targets (needed for the sandbox web).",
)
@click.option(
    "--scope",
    type=click.Choice(["host", "domain", "any"]),
    help="Stay on the seeds' hosts, registered domains [domain], or go anywhere.",
)
@click.option(
    "--host-key",
    type=click.Choice(["host", "domain"]),
    help="Politeness unit: each host [host] or each registered domain.",
)
@click.option("--include", multiple=True, help="Regex a URL must match (repeatable).")
@click.option("--exclude", multiple=True, help="Regex that excludes a URL (repeatable).")
@click.option("--max-depth", type=int, help="Follow links at most N hops from a seed.")
@click.option("--max-requests-per-host", type=int, help="Request budget of one host.")
@click.option("--max-queued-per-host", type=int, help="Queue cap of one host [100000].")
@click.option(
    "--store",
    type=click.Choice(["sqlite", "memory"]),
    help="Frontier backend [sqlite]; memory keeps nothing after exit.",
)
@click.option(
    "--durability",
    type=click.Choice(["crash", "power"]),
    help="crash [default]: commit every step, only in-flight requests repeat after kill -9; "
    "power: batched fsynced commits that also survive a power cut.",
)
@click.option("--no-sitemaps", is_flag=True, default=False, help="Ignore robots.txt Sitemaps.")
@click.option(
    "--progress-interval",
    "progress_interval_s",
    type=float,
    help="Seconds between progress updates [2].",
)
@click.option("-v", "--verbose", is_flag=True, help="Log details to stderr.")
def crawl(
    seeds: tuple[str, ...],
    config_file: Path | None,
    seeds_file: Path | None,
    verbose: bool,
    no_sitemaps: bool,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    **flags: Any,
) -> None:
    """Crawl SEED... politely, writing WARC and a catalogue to --state DIR."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        config = _build_config(seeds, config_file, seeds_file, include, exclude, no_sitemaps, flags)
    except CourtlyError as error:
        raise click.UsageError(str(error)) from None
    except TypeError as error:
        raise click.UsageError(f"missing setting: {error}") from None
    try:
        snapshot = run_async(_crawl(config))
    except CourtlyError as error:
        click.echo(f"courtly: {error}", err=True)
        sys.exit(2)
    sys.exit(0 if snapshot.pages or snapshot.finished else 1)


def _build_config(
    seeds: tuple[str, ...],
    config_file: Path | None,
    seeds_file: Path | None,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    no_sitemaps: bool,
    flags: dict[str, Any],
) -> CrawlConfig:
    values: dict[str, Any] = load_toml(config_file) if config_file is not None else {}
    all_seeds = list(values.get("seeds", ()))
    if seeds_file is not None:
        all_seeds.extend(read_seeds_file(seeds_file))
    all_seeds.extend(seeds)
    values["seeds"] = tuple(dict.fromkeys(all_seeds))
    if include:
        values["include"] = include
    if exclude:
        values["exclude"] = exclude
    if no_sitemaps:
        values["follow_sitemaps"] = False
    for key, value in flags.items():
        if value is not None:
            values[key] = value
    if "state_dir" not in values:
        raise click.UsageError("--state DIR is required (or state_dir in the config file)")
    if "user_agent" not in values:
        raise click.UsageError(
            "--user-agent is required: a product token and a contact, "
            "e.g. 'mybot/1.0 (+https://example.org/bot)'"
        )
    config = CrawlConfig(**values)
    if "processes" not in values:
        processes = default_processes(config.state_dir, config.per_ip)
        config = dataclasses.replace(config, processes=processes)
    return config


async def _crawl(config: CrawlConfig) -> CrawlSnapshot:
    crawler: Crawler | PartitionedCrawl
    if config.processes > 1:  # checks the shares now, the state directory's layout in run()
        level = logging.getLogger().getEffectiveLevel()
        crawler = PartitionedCrawl(config, progress=progress_for(), log_level=level)
    else:
        claim_layout(config.state_dir, 1)  # refuses a partitioned state directory
        crawler = Crawler(config, progress=progress_for())
    loop = asyncio.get_running_loop()
    signals_seen = 0

    def on_signal() -> None:
        nonlocal signals_seen
        signals_seen += 1
        if signals_seen == 1:
            click.echo("\nstopping: finishing requests in flight (again to stop at once)", err=True)
            crawler.request_stop("signal")
        else:
            crawler.abort()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
    return await crawler.run()


def _open_existing(state_dir: Path) -> Any:
    if not (state_dir / "frontier.sqlite3").exists():
        raise click.UsageError(f"no crawl state in {state_dir}")
    config = CrawlConfig(state_dir=state_dir, user_agent="courtly/0 (+mailto:status@localhost)")
    return open_store(config, QueueConfig())


def _existing_dirs(state_dir: Path) -> list[Path]:
    """The store directories of a crawl (one per partition of a partitioned crawl)."""
    try:
        return state_dirs(state_dir)
    except CourtlyError as error:
        raise click.ClickException(str(error)) from None


def _live_status(directory: Path) -> dict[str, Any] | None:
    """The status a running crawl last wrote (its state file is locked), if any."""
    try:
        data = json.loads((directory / STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "frontier" in data else None


@main.command()
@click.option(
    "--state",
    "state_dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False, exists=True),
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of text.")
def status(state_dir: Path, as_json: bool) -> None:
    """Show the frontier and the last run of the crawl in --state DIR."""

    async def read() -> dict[str, Any]:
        all_counts: list[FrontierCounts] = []
        runs: list[Any] = []
        confs: list[Any] = []
        running = False
        for directory in _existing_dirs(state_dir):
            try:
                store = _open_existing(directory)
            except StateError:
                live = _live_status(directory)
                if live is None:
                    raise
                running = True
                all_counts.append(FrontierCounts(**live["frontier"]))
                runs.append(live["last_run"])
                confs.append(None)
                continue
            try:
                all_counts.append(await store.counts(0.0))
                last = await store.get_blob("crawl", "last_run")
                conf = await store.get_blob("crawl", "config")
            finally:
                await store.aclose()
            runs.append(json.loads(last) if last else None)
            confs.append(json.loads(conf) if conf else None)
        counts = merge_counts(all_counts)
        return {
            "state_dir": str(state_dir),
            "frontier": {k: getattr(counts, k) for k in counts.__dataclass_fields__},
            "last_run": runs[0] if len(runs) == 1 else merge_last_runs(runs),
            "config": confs[0],
            "running": running,
        }

    try:
        data = run_async(read())
    except CourtlyError as error:
        raise click.ClickException(str(error)) from None
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True))
        return
    f = data["frontier"]
    click.echo(f"state      {state_dir}")
    if data["running"]:
        click.echo("running    yes: figures from the crawl's last progress tick")
    click.echo(f"queued     {f['queued']} URLs over {f['hosts_active']} active hosts")
    click.echo(f"seen       {f['seen']} URLs; requests made {f['requests_made']}")
    click.echo(f"hosts      retired {f['hosts_retired']}")
    last = data["last_run"]
    if last:
        click.echo(
            f"last run   pages={last['pages']} robots={last['robots_fetches']} "
            f"finished={last['finished']} stop={last['stop_reason']}"
        )
        click.echo(f"errors     {last['errors']}")
        click.echo(f"skipped    {last['skipped']}")


@main.command()
@click.option(
    "--state",
    "state_dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False, exists=True),
)
@click.option("--format", "fmt", type=click.Choice(["jsonl"]), default="jsonl", show_default=True)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write here instead of standard output.",
)
def export(state_dir: Path, fmt: str, output: Path | None) -> None:
    """Export the catalogue (every URL seen, fetched or skipped) as JSON Lines."""
    from courtly.archive.catalogue import export_jsonl

    async def write(out: Any) -> int:
        count = 0
        for directory in _existing_dirs(state_dir):  # a partitioned crawl: one after the other
            store = _open_existing(directory)
            try:
                batch = []
                async for entry in store.catalogue():
                    batch.append(entry)
                    if len(batch) >= 1000:
                        count += export_jsonl(batch, out)
                        batch.clear()
                count += export_jsonl(batch, out)
            finally:
                await store.aclose()
        return count

    try:
        if output is None:
            count = run_async(write(sys.stdout))
        else:
            with output.open("w", encoding="utf-8") as out:
                count = run_async(write(out))
    except CourtlyError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"{count} catalogue entries", err=True)
