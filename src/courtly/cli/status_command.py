"""``courtly status``: the frontier and the last run of a crawl, in words or JSON."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from courtly.cli.failures import expected_errors
from courtly.cli.state_access import (
    CRAWL_NAME,
    SHARED_STORE,
    STATE_DIR,
    crawl_dirs,
    live_status,
    open_existing,
    open_shared,
    stored_config,
)
from courtly.errors import StateLocked
from courtly.event_loop import run_async
from courtly.exit_codes import stop_reason_words
from courtly.frontier.records import FrontierCounts
from courtly.observe.status_file import status_config
from courtly.parallel import merge_counts, merge_last_runs
from courtly.state_dir import STATE_FILE
from courtly.store.redis.address import shown

__all__ = ["status", "status_lines"]


@click.command()
@STATE_DIR
@SHARED_STORE
@CRAWL_NAME
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
    shared = open_shared(store, crawl_name)
    if shared is None and state_dir is None:
        raise click.UsageError("--state DIR (or --store URL --crawl-name NAME) is required")

    async def read_shared() -> dict[str, Any]:
        from redis.exceptions import RedisError

        assert store is not None  # a shared crawl is named by its store

        try:
            counts = await shared.counts(time.time())
            fetchers = await shared.fetchers()
            last = await shared.get_blob("crawl", "last_run")
            conf = await stored_config(shared)
            seed_count = await shared.seed_count()
        except RedisError as error:
            raise click.ClickException(f"{shown(store)}: {error}") from None
        finally:
            await shared.aclose()
        return {
            "store": shown(store),
            "crawl_name": crawl_name,
            "frontier": {k: getattr(counts, k) for k in counts.__dataclass_fields__},
            "last_run": json.loads(last) if last else None,
            "config": _with_seed_count(conf, seed_count) if conf is not None else None,
            "running": counts.leased > 0,
            "fetchers_live": len(fetchers),
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
        for directory in crawl_dirs(state_dir):
            try:
                store = open_existing(directory)
            except StateLocked:  # the lock is held: a crawl runs; its status.json is fresh
                live = live_status(directory)
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
                config = await stored_config(store)
                seeds = await store.seeds()
            finally:
                await store.aclose()
            runs.append(json.loads(last) if last else None)
            # every seed (the state file keeps them: the blob lists the first ones, in the
            # order given), and their number as status.json has it
            if config is not None:
                listed = config.get("seeds", []) if "seeds_total" in config else []
                config["seeds"] = list(dict.fromkeys([*listed, *seeds])) or config.get("seeds")
                confs.append(status_config(config, listed=None))
            else:
                confs.append(None)
        counts = merge_counts(all_counts)
        return {
            "state_dir": str(state_dir),
            "frontier": {k: getattr(counts, k) for k in counts.__dataclass_fields__},
            "last_run": runs[0] if len(runs) == 1 else merge_last_runs(runs),
            "config": confs[0],
            "running": running,
            "progress_age_s": (time.time() - min(ticks)) if ticks else None,
        }

    with expected_errors():  # the output too: a full disk or a closed pipe is said, once
        data = run_async(read())
        if as_json:
            click.echo(json.dumps(data, indent=2, sort_keys=True))
        else:
            for line in status_lines(data):
                click.echo(line)
        sys.stdout.flush()


def _counts_words(items: dict[str, int] | None) -> str:
    if not items:
        return "none"
    return ", ".join(f"{k} {v}" for k, v in sorted(items.items(), key=lambda kv: -kv[1]))


def status_lines(data: dict[str, Any]) -> list[str]:
    """``courtly status`` in words."""
    f = data["frontier"]
    if data.get("crawl_name"):  # a shared crawl: its figures are live
        lines = [f"crawl      {data['crawl_name']} in {data['store']}"]
        if data["running"]:
            lines.append(f"running    {f['leased']} requests in flight")
        if "fetchers_live" in data:
            lines.append(f"fetchers   {data['fetchers_live']} live (leased in the last 5 s)")
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
            *_error_examples(last),
            f"skipped    {_counts_words(last.get('skipped'))}",
        ]
    config = data.get("config")
    if config:
        seeds = config.get("seeds_total", len(config.get("seeds", [])))
        concurrency = config.get("concurrency")
        lines.append(
            f"config     {seeds} seed(s), scope {config.get('scope')}, min delay "
            f"{config.get('min_delay_s')} s, concurrency "
            f"{'auto' if concurrency is None else concurrency}, store {config.get('store')}"
        )
    return lines


_EXAMPLES_SHOWN = 3
_EXAMPLE_CHARS = 200


def _error_examples(last: dict[str, Any]) -> list[str]:
    """A line for each of the commonest errors with a message (``error_examples``): what
    its count cannot say (a certificate refused, a name that does not resolve)."""
    examples: dict[str, str] = last.get("error_examples") or {}
    counts: dict[str, int] = last.get("errors") or {}
    kinds = sorted(examples, key=lambda kind: -counts.get(kind, 0))[:_EXAMPLES_SHOWN]
    lines = []
    for kind in kinds:
        text = examples[kind]
        if len(text) > _EXAMPLE_CHARS:
            text = text[: _EXAMPLE_CHARS - 3] + "..."
        lines.append(f"  e.g.     {kind}: {text}")
    return lines


def _with_seed_count(config: dict[str, Any], stored: int) -> dict[str, Any]:
    """A shared crawl's stored configuration with ``seeds_total`` from its seed set (each
    process's blob may predate another's seeds); a crawl whose processes all predate the
    seed set kept every seed in the blob instead."""
    if not stored:
        return status_config(config, listed=None) if "seeds_total" not in config else config
    return {**config, "seeds_total": stored}
