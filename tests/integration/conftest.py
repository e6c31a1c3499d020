"""Shared fixtures of the integration tests: a sandbox web served from its own thread.

The sandbox runs on its own event loop in a background thread, so a test can
crawl it with ``run_async(...)``, through click's ``CliRunner`` or with a
``python -m courtly`` subprocess, and read its request log once it is stopped.
Everything listens on 127.0.0.0/8 only.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from courtly.archive.catalogue import CatalogueEntry
from courtly.clock import SystemClock
from courtly.config import CrawlConfig
from courtly.crawl import open_store
from courtly.event_loop import run_async
from courtly.frontier.config import QueueConfig
from courtly.frontier.politeness import PolitenessConfig
from courtly.sandbox import (
    AuditReport,
    RequestRecord,
    SandboxServer,
    SandboxSpec,
    audit,
    load_log,
)

UA = "courtly/0.1 (+https://courtly.invalid/bot; tests@courtly.invalid)"
"""The User-Agent of every test crawl (product token ``courtly``, the sandbox's robots token)."""
MIN_DELAY_S = 0.05
PER_IP = 2
CONCURRENCY = 8
_START_TIMEOUT_S = 30.0


class LiveWeb:
    """A :class:`SandboxServer` running on its own event loop in a daemon thread.

    :meth:`stop` is idempotent; :meth:`records` stops the server first, so the
    request log it returns is complete.
    """

    def __init__(self, spec: SandboxSpec, workdir: Path, **options: Any) -> None:
        self.spec = spec
        self.server = SandboxServer(spec, workdir=workdir, **options)
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="sandbox-web", daemon=True)
        self._thread.start()
        if not self._ready.wait(_START_TIMEOUT_S):
            raise RuntimeError("the sandbox web did not start")
        if self._error is not None:
            raise RuntimeError("the sandbox web failed to start") from self._error

    def _run(self) -> None:
        with asyncio.Runner() as runner:
            runner.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        try:
            await self.server.start()
        except BaseException as error:
            self._error = error
            self._ready.set()
            return
        self._ready.set()
        try:
            await self._stop_event.wait()
        finally:
            await self.server.stop()

    @property
    def stopped(self) -> bool:
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Stop serving, flush the request log, join the thread."""
        if self._thread.is_alive() and self._loop is not None and self._stop_event is not None:
            self._loop.call_soon_threadsafe(self._stop_event.set)
        self._thread.join(_START_TIMEOUT_S)

    def records(self) -> list[RequestRecord]:
        """Every request served (the server is stopped first)."""
        self.stop()
        return load_log(self.server.log_path)


@pytest.fixture
def serve_web(tmp_path: Path) -> Iterator[Callable[[SandboxSpec], LiveWeb]]:
    """A factory: ``serve_web(spec)`` starts a sandbox (stopped at teardown)."""
    started: list[LiveWeb] = []

    def start(spec: SandboxSpec) -> LiveWeb:
        web = LiveWeb(spec, tmp_path / f"web{len(started)}")
        started.append(web)
        return web

    yield start
    for web in started:
        web.stop()


@pytest.fixture
def small_web(serve_web: Callable[[SandboxSpec], LiveWeb]) -> LiveWeb:
    """The small sandbox (``SandboxSpec.small()`` with a 3 s robots.txt hang), serving."""
    return serve_web(replace(SandboxSpec.small(), hang_s=3.0))


def crawl_config(web: LiveWeb, state_dir: Path, **overrides: Any) -> CrawlConfig:
    """The crawl config of these tests for ``web``; ``overrides`` replace any field."""
    values: dict[str, Any] = {
        "state_dir": state_dir,
        "user_agent": UA,
        "seeds": web.server.seeds,
        "hosts_file": web.server.hosts_file,
        "allow_private_networks": True,
        "min_delay_s": MIN_DELAY_S,
        "per_ip": PER_IP,
        "concurrency": CONCURRENCY,
        "connect_timeout_s": 1.0,
        "total_timeout_s": 2.0,
        "progress_interval_s": 0.5,
    }
    values.update(overrides)
    return CrawlConfig(**values)


SHORT_RETRIES = PolitenessConfig(
    min_delay_s=MIN_DELAY_S,
    error_backoff_s=0.1,
    max_backoff_s=0.5,
    park_after_errors=2,
    park_s=0.2,
    retire_after_parks=2,
    dead_after_failures=3,
    robots_retry_s=0.2,
)
"""The default schedules (a dead host retired after ~7 minutes) made short for the tests."""


def dead_host_config(state_dir: Path, **overrides: Any) -> CrawlConfig:
    """A crawl of two pages of a host that never answers (a loopback port nothing listens
    on: every connection is refused), with short timeouts."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    config = CrawlConfig(
        state_dir=state_dir,
        user_agent=UA,
        seeds=(f"http://127.0.0.1:{port}/", f"http://127.0.0.1:{port}/a"),
        allow_private_networks=True,
        min_delay_s=MIN_DELAY_S,
        connect_timeout_s=1.0,
        total_timeout_s=2.0,
        progress_interval_s=0.5,
    )
    return replace(config, **overrides)


def crawl_flags(web: LiveWeb, state_dir: Path, *, min_delay_s: float = MIN_DELAY_S) -> list[str]:
    """The ``courtly crawl`` flags of :func:`crawl_config`'s sandbox settings: the state
    directory, the web's hosts file, private addresses allowed, the test User-Agent, the
    gap and the per-IP cap (add the seeds and the rest)."""
    return [
        "--state", str(state_dir),
        "--hosts-file", str(web.server.hosts_file),
        "--allow-private-networks",
        "--user-agent", UA,
        "--min-delay", str(min_delay_s),
        "--per-ip", str(PER_IP),
    ]  # fmt: skip


def crawl_command(
    web: LiveWeb, state_dir: Path, *flags: str, min_delay_s: float = MIN_DELAY_S
) -> list[str]:
    """``python -m courtly crawl`` of ``web``'s seeds file with :func:`crawl_flags`, then
    ``flags``: a crawl in a process of its own, as a user starts one."""
    return [
        sys.executable, "-m", "courtly", "crawl",
        "--seeds-file", str(web.server.seeds_file),
        *crawl_flags(web, state_dir, min_delay_s=min_delay_s),
        *flags,
    ]  # fmt: skip


def warc_responses(warc_dirs: Iterable[Path]) -> dict[tuple[str, int], str]:
    """(file name, offset) -> WARC-Target-URI of every response record in the WARC files
    of ``warc_dirs``; every file must read with warcio to its last byte (warcio stops
    quietly at a torn last member, so the end is checked too), digests right."""
    found: dict[tuple[str, int], str] = {}
    for warc_dir in warc_dirs:
        for path in sorted(warc_dir.glob("*.warc.gz")):
            end = 0
            with path.open("rb") as handle:
                records = ArchiveIterator(handle, check_digests="raise")
                for record in records:
                    record.content_stream().read()
                    assert record.digest_checker.passed is not False, path
                    if record.rec_type == "response":
                        uri = record.rec_headers.get_header("WARC-Target-URI")
                        found[(path.name, records.get_record_offset())] = uri
                    end = records.get_record_offset() + records.get_record_length()
            assert end == path.stat().st_size, f"{path} ends in a torn record"
    return found


def catalogue_of(config: CrawlConfig) -> list[CatalogueEntry]:
    """Every catalogue entry of the crawl ``config`` describes, read from its store."""

    async def read() -> list[CatalogueEntry]:
        store = open_store(config, QueueConfig())
        try:
            return [entry async for entry in store.catalogue()]
        finally:
            await store.aclose()

    return run_async(read())


def audit_web(
    web: LiveWeb,
    records: list[RequestRecord] | None = None,
    *,
    min_delay_s: float = MIN_DELAY_S,
    tolerance_s: float = 0.005,
    follow_sitemaps: bool = False,
) -> AuditReport:
    """The audit of ``records`` (default: every request the web served) against the web's
    truth and seeds, at ``min_delay_s``, the crawl-wide cap :data:`PER_IP` and the
    ``courtly`` robots token: what every test crawl is held to (``tolerance_s`` and
    ``follow_sitemaps`` as :func:`courtly.sandbox.audit` takes them)."""
    return audit(
        web.records() if records is None else records,
        spec_or_truth=web.server.truth,
        min_delay_s=min_delay_s,
        per_ip_cap=PER_IP,
        user_agent_token="courtly",
        tolerance_s=tolerance_s,
        follow_sitemaps=follow_sitemaps,
        seeds=web.server.seeds,
    )


def assert_polite(report: AuditReport, *, lost_repeats: int = 0) -> None:
    """Every check of the audit, one by one, so that a failure names the rule broken.

    ``lost_repeats``: how many of the audit's duplicates the test has matched, one for
    one, with a retry the crawler itself made of that URL after an attempt whose answer
    it never got whole (its timeout fired first): a request the server answered in full
    but the client lost is rightly asked again (courtly.frontier.retry). The test
    proves the match; the audit's count must equal it exactly.
    """
    summary = report.summary()
    assert report.host_overlaps == 0, summary
    assert report.max_in_flight_per_host == 1, summary
    assert report.ip_over_cap == 0, summary
    assert report.max_in_flight_per_ip <= PER_IP, summary
    assert report.gap_violations == 0, summary
    assert report.retry_after_violations == 0, summary
    assert report.disallowed_fetches == 0, summary
    assert report.robots_unavailable_fetches == 0, summary
    assert report.duplicate_fetches == lost_repeats, summary
    assert report.unknown_host_requests == 0, summary
    assert report.violations == lost_repeats, summary


class LeapingClock(SystemClock):
    """The wall clock, which the test can move forward (``leap``): a ``max_time`` stop
    then comes as soon as the work the test waits for is done, however long a loaded
    machine took to do it, instead of at a wall-clock moment that may come first."""

    def __init__(self) -> None:
        self.ahead_s = 0.0

    def now(self) -> float:
        return super().now() + self.ahead_s

    def leap(self, delta_s: float) -> None:
        self.ahead_s += delta_s

    async def sleep(self, delay_s: float) -> None:
        deadline = self.now() + delay_s
        # No event to wait on: a leap moves the clock, and ends the sleep within 50 ms.
        while (left_s := deadline - self.now()) > 0:  # noqa: ASYNC110
            await asyncio.sleep(min(left_s, 0.05))


def one_address_spec(pages_per_host: int) -> SandboxSpec:
    """Eight hosts behind one address, every one a little slow (20 ms an answer): with two
    places at the address, requests wait for one there, as on a web of many virtual hosts
    behind one server."""
    return SandboxSpec(
        n_sites=2,
        hosts_per_site=4,
        pages_per_host=pages_per_host,
        ips=1,
        robots_variants=("rules", "missing", "wildcard", "token_open"),
        slow_hosts=8,
        slow_s=0.02,
        flaky_hosts=0,
        dead_hosts=0,
        trap_hosts=0,
        hostile_hosts=0,
        special_pages=False,
        external_links=False,
    )
