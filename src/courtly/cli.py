"""The ``courtly`` command line: thin, arguments -> config -> run.

``courtly crawl``, ``courtly status``, ``courtly export`` and ``courtly sandbox``.
Every crawl flag has a TOML twin (``--config FILE``; flags win over the file).

Input is checked before anything is written: a refused run (exit code 2, see
:mod:`courtly.exit_codes`) prints ``Error: ...`` and leaves no state directory.
No input ends in a traceback: every error courtly expects is a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from courtly import __version__
from courtly.config import CrawlConfig, load_toml, read_seeds_file
from courtly.crawl import STATUS_FILE, Crawler, CrawlSnapshot, open_store
from courtly.errors import ConfigError, CourtlyError, StateError, StateLocked
from courtly.exit_codes import ExitCode, exit_code_for, stop_reason_words
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import FrontierCounts
from courtly.observe.attach import DashboardSpec, TeeProgress, serving
from courtly.observe.command import dashboard, dashboard_spec
from courtly.parallel import (
    PartitionedCrawl,
    claim_layout,
    default_processes,
    merge_counts,
    merge_last_runs,
    state_dirs,
)
from courtly.progress import LogProgress, RichProgress, progress_for
from courtly.sandbox.cli import sandbox
from courtly.state_dir import STATE_FILE, check_crawl_target, check_writable
from courtly.store.redis.address import is_redis_url

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
main.add_command(dashboard)


def _refuse(message: str, summary_json: Path | None = None) -> NoReturn:
    """Print ``Error: message`` and exit with :attr:`ExitCode.REFUSED` (click's usage code)."""
    click.echo(f"Error: {message}", err=True)
    if summary_json is not None:
        _write_json(
            summary_json,
            {"exit_code": int(ExitCode.REFUSED), "outcome": "refused", "error": message},
        )
    sys.exit(ExitCode.REFUSED)


def _fail(message: str, summary_json: Path | None = None) -> NoReturn:
    """Print ``Error: message`` and exit with :attr:`ExitCode.FAILED`."""
    click.echo(f"Error: {message}", err=True)
    if summary_json is not None:
        _write_json(
            summary_json, {"exit_code": int(ExitCode.FAILED), "outcome": "failed", "error": message}
        )
    sys.exit(ExitCode.FAILED)


def _os_error(error: OSError) -> str:
    where = f"{error.filename}: " if error.filename else ""
    return f"{where}{error.strerror or error}"


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` whole (a temporary file renamed into place)."""
    temporary = path.with_name(path.name + ".tmp")
    try:
        temporary.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        temporary.replace(path)
    except OSError as error:
        click.echo(f"Error: cannot write the summary: {_os_error(error)}", err=True)


@contextlib.contextmanager
def _expected_errors(summary_json: Path | None = None) -> Iterator[None]:
    """Turn the errors courtly expects into a message and an exit code (never a traceback)."""
    try:
        yield
    except (CourtlyError, click.UsageError) as error:
        _refuse(
            error.format_message() if isinstance(error, click.UsageError) else str(error),
            summary_json,
        )
    except sqlite3.DatabaseError as error:
        _refuse(
            f"the state file is damaged ({error}): restore it from a backup, or move the "
            "state directory away to start a new crawl",
            summary_json,
        )
    except OSError as error:
        _fail(_os_error(error), summary_json)


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
    help="[required, or `state` in --config] State directory: frontier, catalogue, WARC. "
    "Reused = resumed.",
)
@click.option(
    "--user-agent",
    help="[required, or `user-agent` in --config] Product token plus a contact URL or e-mail.",
)
@click.option("--min-delay", "min_delay_s", type=float, help="Least gap per host, seconds [1.0].")
@click.option("--delay-factor", type=float, help="Gap >= K x last fetch time [2.0].")
@click.option("--max-delay", "max_delay_s", type=float, help="Cap on the two above, seconds [60].")
@click.option(
    "--max-time",
    "max_time_s",
    type=float,
    help="Stop after S seconds (the crawl ends within S + --stop-grace).",
)
@click.option("--max-pages", type=int, help="Stop after N fetched pages.")
@click.option(
    "--stop-grace",
    "stop_grace_s",
    type=float,
    help="After a stop, abandon requests still in flight after S seconds [5].",
)
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
@click.option(
    "--keep-param",
    "keep_params",
    multiple=True,
    help="Keep this query parameter (or prefix NAME*) although it is a tracking one "
    "(repeatable; see docs/urls.md).",
)
@click.option(
    "--drop-param",
    "drop_params",
    multiple=True,
    help="Drop this query parameter (or prefix NAME*) from every URL, as the tracking "
    "ones are (repeatable).",
)
@click.option("--max-requests-per-host", type=int, help="Request budget of one host.")
@click.option(
    "--max-attempts",
    type=int,
    help="Attempts at a page whose fetch fails (no response, 5xx, 429) [3].",
)
@click.option("--max-queued-per-host", type=int, help="Queue cap of one host [100000].")
@click.option(
    "--store",
    help="Frontier backend: sqlite [default], memory (nothing kept after exit), or a shared "
    "Redis: redis://HOST:PORT[/DB] or redis+cluster://HOST:PORT[,HOST:PORT...].",
)
@click.option(
    "--crawl-name",
    help="The crawl's name in a Redis store: processes with the same store and name join it.",
)
@click.option(
    "--durability",
    type=click.Choice(["crash", "power"]),
    help="crash [default]: commit every step, only in-flight requests repeat after kill -9; "
    "power: batched fsynced commits that also survive a power cut.",
)
@click.option("--no-sitemaps", is_flag=True, default=False, help="Ignore robots.txt Sitemaps.")
@click.option(
    "--recrawl",
    is_flag=True,
    default=None,
    help="Keep going: revisit fetched pages when due, with conditional GET; ends only by "
    "a signal or --max-time (one process; memory or SQLite store).",
)
@click.option(
    "--recrawl-share",
    type=float,
    help="Most of the fetches revisits take while discovery work is queued, 0..1 [0.5].",
)
@click.option(
    "--recrawl-min-interval",
    "recrawl_min_interval_s",
    type=float,
    help="Shortest revisit interval of a URL, seconds [3600].",
)
@click.option(
    "--news",
    multiple=True,
    help="Regex of news pages (repeatable): their own revisit lane, first in the front "
    "queues, with a lower floor (--news-min-interval).",
)
@click.option(
    "--news-min-interval",
    "news_min_interval_s",
    type=float,
    help="Shortest revisit interval of a news page, seconds [a quarter of --recrawl-min-interval].",
)
@click.option(
    "--recrawl-max-interval",
    "recrawl_max_interval_s",
    type=float,
    help="Longest revisit interval, seconds [2592000 = 30 days].",
)
@click.option(
    "--progress-interval",
    "progress_interval_s",
    type=float,
    help="Seconds between progress updates, at least 0.1 [2].",
)
@click.option(
    "--summary-json",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the final summary (or the refusal) to FILE as JSON, exit code included.",
)
@click.option(
    "--dashboard",
    "dashboard_at",
    metavar="[HOST:]PORT",
    help="Serve the live dashboard, /metrics and /api/* there (host 127.0.0.1; port 0: any).",
)
@click.option(
    "--dashboard-token",
    help="Token the dashboard asks for (required for a HOST other than loopback).",
)
@click.option("-v", "--verbose", count=True, help="More on stderr: -v a line per URL, -vv debug.")
@click.option("-q", "--quiet", is_flag=True, help="Errors only: no progress, no summary.")
def crawl(
    seeds: tuple[str, ...],
    dashboard_at: str | None,
    dashboard_token: str | None,
    config_file: Path | None,
    seeds_file: Path | None,
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
        with _expected_errors():
            check_writable(summary_json.parent, "the directory of --summary-json", must_exist=True)
    with _expected_errors(summary_json):
        spec = dashboard_spec(dashboard_at, dashboard_token)
        if spec is not None and flags.get("progress_interval_s") is None:
            flags["progress_interval_s"] = 1.0  # the dashboard's history is at 1 Hz
        config = _build_config(seeds, config_file, seeds_file, include, exclude, no_sitemaps, flags)
        check_crawl_target(config)
    progress = None
    if not quiet:
        progress = progress_for(summary_on_close=False, catalogue_kept=config.store == "sqlite")
    _setup_logging(verbose, quiet, progress)
    with _expected_errors(summary_json):
        snapshot = run_async(_crawl(config, progress, spec))
    code = exit_code_for(snapshot)
    if progress is not None:
        progress.summary(snapshot)
        if code is ExitCode.NOTHING_FETCHED:
            progress.notice(_nothing_fetched_hint(snapshot, config))
    if summary_json is not None:
        _write_json(summary_json, _summary_data(snapshot, code, config))
    sys.exit(code)


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
    if "processes" not in values and not is_redis_url(config.store) and not config.recrawl:
        processes = default_processes(config.state_dir, config.per_ip)
        config = dataclasses.replace(config, processes=processes)
    return config


async def _crawl(
    config: CrawlConfig,
    progress: LogProgress | RichProgress | None,
    dashboard: DashboardSpec | None = None,
) -> CrawlSnapshot:
    crawler: Crawler | PartitionedCrawl
    try:
        if config.processes > 1:  # checks the shares now, the state directory's layout in run()
            level = logging.getLogger().getEffectiveLevel()
            sink = TeeProgress(progress, dashboard.source) if dashboard else progress
            crawler = PartitionedCrawl(config, progress=sink, log_level=level)
        else:
            claim_layout(config.state_dir, 1)  # refuses a partitioned state directory
            crawler = Crawler(config, progress=progress)
            if dashboard is not None:
                dashboard.for_crawler(crawler)
    except OSError as error:  # before anything is crawled: the --state path is unusable
        raise ConfigError(
            f"cannot use the state directory {config.state_dir}: {_os_error(error)}"
        ) from None
    loop = asyncio.get_running_loop()
    signals_seen = 0
    say: Callable[[str], None] = progress.notice if progress is not None else _say

    def on_signal() -> None:
        nonlocal signals_seen
        signals_seen += 1
        if signals_seen == 1:
            say(
                f"stopping: finishing requests in flight, at most {config.stop_grace_s:g} s "
                "(again to stop at once)"
            )
            crawler.request_stop("signal")
        else:
            say("stopping now: requests in flight are fetched again on resume")
            crawler.abort()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
    if dashboard is None:
        return await crawler.run()
    async with serving(dashboard, say):
        return await crawler.run()


def _say(text: str) -> None:
    click.echo(text, err=True)


def _open_existing(state_dir: Path) -> Any:
    """The store of a crawl's state directory; StateError (missing, damaged, locked)."""
    path = state_dir / STATE_FILE
    if not os.path.lexists(path):
        raise StateError(
            f"{path}: no crawl state here (the state file is missing); start a crawl with "
            f"courtly crawl --state {state_dir} SEED..."
        )
    config = CrawlConfig(state_dir=state_dir, user_agent="courtly/0 (+mailto:status@localhost)")
    return open_store(config, QueueConfig())


def _existing_dirs(state_dir: Path) -> list[Path]:
    """The store directories of a crawl (one per partition of a partitioned crawl)."""
    return state_dirs(state_dir)


def _live_status(directory: Path) -> dict[str, Any] | None:
    """The status a running crawl last wrote (its state file is locked), if any."""
    try:
        data = json.loads((directory / STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "frontier" in data else None


def _open_shared(store: str | None, crawl_name: str | None) -> Any:
    """The Redis store of ``--store URL --crawl-name NAME``; ``None`` without ``--store``."""
    if store is None:
        return None
    from courtly.store.redis import RedisStore
    from courtly.store.redis.address import connect, is_redis_url

    if not is_redis_url(store):
        raise click.UsageError(f"--store here takes a redis:// URL, not {store!r}")
    if not crawl_name:
        raise click.UsageError("--store needs --crawl-name NAME")
    return RedisStore(connect(store), crawl_name, retry_s=5.0)


_SHARED_STORE = click.option("--store", help="A shared crawl's Redis URL (with --crawl-name).")
_CRAWL_NAME = click.option("--crawl-name", help="The crawl's name in the --store.")


@main.command()
@click.option(
    "--state",
    "state_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="The state directory of the crawl.",
)
@_SHARED_STORE
@_CRAWL_NAME
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of text.")
def status(
    state_dir: Path | None, store: str | None, crawl_name: str | None, as_json: bool
) -> None:
    """Show the frontier and the last run of the crawl in --state DIR, or of the shared
    crawl --crawl-name in a Redis --store.

    A crawl is shown as running only while it holds its state file's lock; its
    figures are then those of its last progress tick. Exit code 2 for a missing
    or damaged state file.
    """
    shared = _open_shared(store, crawl_name)
    if shared is None and state_dir is None:
        raise click.UsageError("--state DIR (or --store URL --crawl-name NAME) is required")

    async def read_shared() -> dict[str, Any]:
        from redis.exceptions import RedisError

        try:
            counts = await shared.counts(time.time())
            last = await shared.get_blob("crawl", "last_run")
            conf = await shared.get_blob("crawl", "config")
        except RedisError as error:
            raise click.ClickException(f"{store}: {error}") from None
        finally:
            await shared.aclose()
        return {
            "store": store,
            "crawl_name": crawl_name,
            "frontier": {k: getattr(counts, k) for k in counts.__dataclass_fields__},
            "last_run": json.loads(last) if last else None,
            "config": json.loads(conf) if conf else None,
            "running": counts.leased > 0,
        }

    async def read() -> dict[str, Any]:
        if shared is not None:
            return await read_shared()
        assert state_dir is not None
        all_counts: list[FrontierCounts] = []
        runs: list[Any] = []
        confs: list[Any] = []
        running = False
        ticks: list[float] = []
        for directory in _existing_dirs(state_dir):
            try:
                store = _open_existing(directory)
            except StateLocked:  # the lock is held: a crawl runs; its status.json is fresh
                live = _live_status(directory)
                running = True
                if live is None:
                    raise StateLocked(
                        f"{directory / STATE_FILE}: a crawl is running on this state and has "
                        "not reported progress yet; try again in a few seconds"
                    ) from None
                all_counts.append(FrontierCounts(**live["frontier"]))
                runs.append(live["last_run"])
                confs.append(live.get("config"))
                ticks.append(float(live["last_run"].get("updated_at", 0.0)))
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
            "progress_age_s": (time.time() - min(ticks)) if ticks else None,
        }

    with _expected_errors():
        data = run_async(read())
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True))
        return
    for line in _status_lines(data):
        click.echo(line)


def _counts_words(items: dict[str, int] | None) -> str:
    if not items:
        return "none"
    return ", ".join(f"{k} {v}" for k, v in sorted(items.items(), key=lambda kv: -kv[1]))


def _status_lines(data: dict[str, Any]) -> list[str]:
    """``courtly status`` in words."""
    f = data["frontier"]
    if data.get("crawl_name"):  # a shared crawl: its figures are live
        lines = [f"crawl      {data['crawl_name']} in {data['store']}"]
        if data["running"]:
            lines.append(f"running    {f['leased']} requests in flight")
        lines += [
            f"queued     {f['queued']} URLs over {f['hosts_active']} active hosts",
            f"seen       {f['seen']} URLs; requests made {f['requests_made']}",
            f"hosts      {f['hosts_retired']} retired",
        ]
    else:
        lines = [f"state      {data['state_dir']}"]
        if data["running"]:
            age = data.get("progress_age_s")
            when = f", {age:.0f} s ago" if age is not None else ""
            lines.append(f"crawl      running (figures from its last progress tick{when})")
        else:
            lines.append("crawl      not running")
        lines += [
            f"queued     {f['queued']} URLs over {f['hosts_active']} active hosts",
            f"seen       {f['seen']} URLs; requests made {f['requests_made']}",
            f"hosts      {f['hosts_retired']} retired",
        ]
    last = data["last_run"]
    if last:
        state = "running" if data["running"] else stop_reason_words(last.get("stop_reason"))
        lines += [
            f"last run   {last['pages']} pages, {last['robots_fetches']} robots.txt fetches, "
            f"{last.get('bytes_received', 0) / 1e6:.1f} MB: {state}",
            *([f"why        {last['stop_detail']}"] if last.get("stop_detail") else []),
            f"errors     {_counts_words(last.get('errors'))}",
            f"skipped    {_counts_words(last.get('skipped'))}",
        ]
    config = data.get("config")
    if config:
        seeds = config.get("seeds", [])
        lines.append(
            f"config     {len(seeds)} seed(s), scope {config.get('scope')}, min delay "
            f"{config.get('min_delay_s')} s, concurrency {config.get('concurrency')}, "
            f"store {config.get('store')}"
        )
    return lines


@main.command()
@click.option(
    "--state",
    "state_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="The state directory of the crawl.",
)
@_SHARED_STORE
@_CRAWL_NAME
@click.option("--format", "fmt", type=click.Choice(["jsonl"]), default="jsonl", show_default=True)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write here instead of standard output.",
)
def export(
    state_dir: Path | None,
    store: str | None,
    crawl_name: str | None,
    fmt: str,
    output: Path | None,
) -> None:
    """Export the catalogue (every URL seen, fetched or skipped) as JSON Lines: of the
    crawl in --state DIR, or of the shared crawl --crawl-name in a Redis --store.

    ``-o FILE`` appears whole or not at all. Exit code 2 for a missing, damaged or
    locked state file or an unwritable output.
    """
    from courtly.archive.catalogue import export_jsonl

    shared = _open_shared(store, crawl_name)
    if shared is None and state_dir is None:
        raise click.UsageError("--state DIR (or --store URL --crawl-name NAME) is required")

    async def write(out: Any) -> int:
        count = 0
        if shared is not None:
            openers: list[Callable[[], Any]] = [lambda: shared]
        else:
            assert state_dir is not None
            # a partitioned crawl: one directory after the other
            openers = [functools.partial(_open_existing, d) for d in _existing_dirs(state_dir)]
        for open_one in openers:
            opened = open_one()
            try:
                batch = []
                async for entry in opened.catalogue():
                    batch.append(entry)
                    if len(batch) >= 1000:
                        count += export_jsonl(batch, out)
                        batch.clear()
                count += export_jsonl(batch, out)
            finally:
                await opened.aclose()
        return count

    with _expected_errors():
        for directory in _existing_dirs(state_dir) if state_dir is not None else ():
            if not os.path.lexists(directory / STATE_FILE):  # refuse before creating the output
                _open_existing(directory)
        if output is None:
            count = run_async(write(sys.stdout))
        else:
            check_writable(output.parent, "the directory of --output", must_exist=True)
            partial = output.with_name(output.name + ".partial")
            try:  # the output appears whole, or not at all
                with partial.open("w", encoding="utf-8") as out:
                    count = run_async(write(out))
                partial.replace(output)
            finally:
                partial.unlink(missing_ok=True)
    click.echo(f"{count} catalogue entries", err=True)


@main.command()
@click.option(
    "--state",
    "state_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    required=True,
    help="The state directory of a crawl run with --recrawl.",
)
@click.option("--since", help="Only changes at or after TIME (epoch seconds or ISO 8601, UTC).")
@click.option("--format", "fmt", type=click.Choice(["jsonl"]), default="jsonl", show_default=True)
def changes(state_dir: Path, since: str | None, fmt: str) -> None:
    """What changed: one JSON line per revisit that found a page changed (URL, when,
    status and size before and after, SimHash distance, title); see docs/recrawl.md."""
    from courtly.changes import events_from_bytes, export_jsonl, parse_since

    with _expected_errors():
        try:
            since_at = parse_since(since) if since is not None else None
        except ValueError as error:
            raise ConfigError(str(error)) from None

        async def read() -> bytes | None:
            store = _open_existing(state_dir)
            try:
                data: bytes | None = await store.get_blob("recrawl", "changes")
                return data
            finally:
                await store.aclose()

        count = export_jsonl(events_from_bytes(run_async(read())), sys.stdout, since=since_at)
    click.echo(f"{count} changes", err=True)
