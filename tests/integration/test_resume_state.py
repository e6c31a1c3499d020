"""Resuming a crawl reuses its state: seeds, robots.txt decisions, politeness across runs."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from courtly.config import CrawlConfig
from courtly.crawl import STATUS_FILE, Crawler, CrawlSnapshot
from courtly.exit_codes import ExitCode
from courtly.sandbox import SandboxServer, SandboxSpec, audit, load_log

UA = "courtly/0.1 (+mailto:ops@example.org)"
GUARD_S = 120.0
"""How long a crawl process may take to exit before the test calls it hung: a guard against
a hang, not a speed bound. What a stop promises is timed on the crawler's own clock (its
final status record); what follows it, the interpreter's exit, and what precedes a run,
its start-up, take what the machine gives them (seconds each at a load of 20)."""


def _config(web: SandboxServer, state: Path, **overrides: Any) -> CrawlConfig:
    """A quick polite crawl of the sandbox ``web`` into ``state``."""
    return CrawlConfig(
        state_dir=state,
        user_agent=UA,
        seeds=tuple(web.seeds),
        hosts_file=web.hosts_file,
        allow_private_networks=True,
        min_delay_s=0.05,
        concurrency=8,
        connect_timeout_s=1.0,
        progress_interval_s=0.5,
    ).with_overrides(**overrides)


SAFETY_MAX_TIME_S = 60.0
"""A limit against a crawl that would not stop: the runs below stop on their own count."""


async def _run_for_pages(config: CrawlConfig, pages: int) -> CrawlSnapshot:
    """Run a crawl of ``config`` and stop it (``request_stop``) once it has fetched
    ``pages`` pages: a stop on the work done, where a ``max_time`` of a few seconds was
    outlasted on a loaded machine before any page (robots.txt only: seen in a full run)."""
    crawler = Crawler(config)

    async def stop_when_enough() -> None:
        while crawler.stats.pages < pages:  # noqa: ASYNC110 (the crawl's count is the evidence)
            await asyncio.sleep(0.02)
        crawler.request_stop("enough pages")

    watcher = asyncio.create_task(stop_when_enough())
    try:
        return await crawler.run()
    finally:
        watcher.cancel()


@pytest.mark.integration
async def test_a_resumed_crawl_keeps_robots_decisions_and_politeness(tmp_path: Path) -> None:
    async with SandboxServer(SandboxSpec.small(), workdir=tmp_path / "web") as web:
        first = _config(web, tmp_path / "state", max_time_s=SAFETY_MAX_TIME_S, total_timeout_s=2.0)
        snapshot = await _run_for_pages(first, 20)
        assert snapshot.pages > 0 and snapshot.stop_reason == "enough pages", snapshot
        split_at = time.time()
        # The same state directory, no seeds given: the crawl resumes from what it stored.
        second = first.with_overrides(seeds=())
        resumed = await _run_for_pages(second, 10)
    # Read once the server has stopped: it flushes its log every 0.5 s and on stopping, so
    # a read while it runs can miss the last second of requests (on a loaded machine, all
    # of the resumed run's: seen in a full run of the suite).
    records = load_log(web.log_path)
    assert resumed.pages > 0
    ok_before = {
        r.host
        for r in records
        if r.start_at < split_at and r.path == "/robots.txt" and r.status == 200
    }
    after = [r for r in records if r.start_at >= split_at]
    assert ok_before and after
    # Hosts whose robots.txt answered 200 are not asked again within the cache lifetime.
    asked_again = [r.host for r in after if r.path == "/robots.txt" and r.host in ok_before]
    assert asked_again == []
    assert {r.host for r in after} & ok_before, "the resumed run fetched from those hosts"
    # status.json (what `courtly status` shows of a running crawl) counts the stored seeds,
    # not the none given to the resumed run
    status = json.loads((tmp_path / "state" / STATUS_FILE).read_text(encoding="utf-8"))
    assert status["config"]["seeds_total"] == len(web.seeds) > 0
    report = audit(
        records,
        spec_or_truth=web.truth,
        min_delay_s=first.min_delay_s,
        per_ip_cap=first.per_ip,
        seeds=web.seeds,
    )
    assert report.violations == 0, report.summary()


def _crawl_command(web: SandboxServer, state: Path, *extra: str, seeds: bool = True) -> list[str]:
    """``courtly crawl`` of the sandbox; without ``seeds`` it resumes what ``state`` holds."""
    seeds_args = ["--seeds-file", str(web.seeds_file)] if seeds else []
    return [
        sys.executable,
        "-m",
        "courtly",
        "crawl",
        *seeds_args,
        "--hosts-file",
        str(web.hosts_file),
        "--allow-private-networks",
        "--state",
        str(state),
        "--user-agent",
        UA,
        "--min-delay",
        "0.05",
        "--timeout",
        "3",
        "--concurrency",
        "8",
        "--processes",  # the single-process crawl (the partitioned one: test_parallel.py)
        "1",
        *extra,
    ]


async def _wait(proc: asyncio.subprocess.Process, timeout_s: float) -> int:
    return await asyncio.wait_for(proc.wait(), timeout_s)


async def _until_requests(web: SandboxServer, count: int, *, timeout_s: float) -> None:
    """Wait until the sandbox has logged ``count`` requests (the crawl is under way)."""
    deadline = time.monotonic() + timeout_s
    while web.requests_logged < count:
        assert time.monotonic() < deadline, f"no {count} requests within {timeout_s} s"
        await asyncio.sleep(0.05)


@pytest.mark.integration
@pytest.mark.parametrize("signals", [1, 2])
async def test_sigint_stops_cleanly_and_a_second_one_at_once(tmp_path: Path, signals: int) -> None:
    async with SandboxServer(SandboxSpec.small(), workdir=tmp_path / "web") as web:
        state = tmp_path / "state"
        proc = await asyncio.create_subprocess_exec(
            *_crawl_command(web, state),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        # Signal a crawl that is crawling: on a loaded machine the interpreter may still
        # be importing after seconds, and a SIGINT then is a KeyboardInterrupt, not a stop.
        await _until_requests(web, 5, timeout_s=60.0)
        signalled_at = time.time()
        for _ in range(signals):
            proc.send_signal(signal.SIGINT)
            await asyncio.sleep(0.05)
        rc = await _wait(proc, GUARD_S)
        exited_at = time.time()
        assert proc.stderr is not None
        err = (await proc.stderr.read()).decode()
        assert rc == ExitCode.SIGNAL, err
        # One SIGINT: requests in flight finish (bounded by the 5 s grace); two: at once.
        # Timed on the crawler's own clock: from the signal to its final record of the run
        # (status.json, written once the crawl has stopped), so that the interpreter's exit
        # on a loaded machine is bounded by the wait above, not counted as the crawl's.
        status = json.loads((state / "status.json").read_text(encoding="utf-8"))
        assert not status["running"] and status["last_run"]["finished"], status
        took_s = status["last_run"]["updated_at"] - signalled_at
        print(f"stopped {took_s:.2f} s after SIGINT, exited {exited_at - signalled_at:.2f} s after")
        assert took_s < (8.0 if signals == 1 else 3.0), (took_s, err)
        assert "stopping" in err
        # The state resumes: a further run (no seeds) finds the stored frontier and crawls on.
        resumed = await asyncio.create_subprocess_exec(
            *_crawl_command(web, state, "--max-time", "2", seeds=False),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        assert await _wait(resumed, GUARD_S) in (ExitCode.DONE, ExitCode.LIMIT)


@pytest.mark.integration
async def test_a_changed_configuration_is_reported(tmp_path: Path) -> None:
    async with SandboxServer(SandboxSpec.small(), workdir=tmp_path / "web") as web:
        config = _config(web, tmp_path / "state", max_time_s=1.0, total_timeout_s=1.0)
        first = Crawler(config)
        await first.run()
        assert first.config_changes == []
        second = Crawler(config.with_overrides(min_delay_s=0.1, scope="any"))
        await second.run()
    changed = {change.split(":")[0] for change in second.config_changes}
    assert changed == {"min_delay_s", "scope"}


@pytest.mark.integration
async def test_status_reads_a_running_crawl(tmp_path: Path) -> None:
    async with SandboxServer(SandboxSpec.small(), workdir=tmp_path / "web") as web:
        state = tmp_path / "state"
        proc = await asyncio.create_subprocess_exec(
            *_crawl_command(web, state, "--max-time", "20", "--progress-interval", "0.3"),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            for _ in range(100):  # the first progress tick writes the live status
                await asyncio.sleep(0.1)
                if (state / STATUS_FILE).exists():
                    break
            await asyncio.sleep(0.5)
            status = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "courtly", "status", "--state", str(state), "--json"),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await status.communicate()
        finally:
            proc.send_signal(signal.SIGINT)
            await _wait(proc, GUARD_S)
    assert status.returncode == 0, err.decode()
    data = json.loads(out)
    assert data["running"] is True
    assert set(data["config"]["seeds"]) == set(web.seeds)  # the running crawl's, never null
    assert data["last_run"]["pages"] > 0
    assert data["frontier"]["seen"] > 0
