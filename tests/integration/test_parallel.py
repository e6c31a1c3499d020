"""Host-partitioned crawling (``courtly.parallel``), end to end and piece by piece.

* ownership: every host in exactly one partition, by a hash that does not change
  between processes (unlike Python's ``hash``);
* the termination detector: two quiet rounds with the same counters, never one;
* forwarding survives a crash: URLs appended to an inbox are queued by a new
  partition on the same directory, a torn last line is dropped, a re-read after
  a lost offset only finds repeats;
* a 2-process crawl of a small sandbox web ends by itself (no ``--max-time``),
  stays polite across the processes (one per host, per-IP cap summed) and covers
  every reachable page; ``status`` and ``export`` read the partitions together;
* a resume with another number of processes is refused, clearly.
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil
import pytest
from click.testing import CliRunner

from courtly.cli import main as cli_main
from courtly.cli import run_async
from courtly.config import CrawlConfig
from courtly.crawl import Crawler, CrawlSnapshot
from courtly.errors import ConfigError, StateError
from courtly.exit_codes import ExitCode
from courtly.frontier.records import AddStatus, FrontierCounts, QueuedUrl
from courtly.parallel import (
    LAYOUT_FILE,
    HostPartition,
    PartitionedCrawl,
    PartitionStatus,
    TerminationDetector,
    available_cores,
    claim_layout,
    default_processes,
    merge_counts,
    partition_config,
    partition_dir,
    partition_of,
    stable_hash,
    state_dirs,
)
from courtly.parallel.layout import partitions_without_state
from courtly.parallel.supervisor import probe_wait_s
from courtly.sandbox import ROBOTS_VARIANTS, RequestRecord, SandboxSpec, audit
from courtly.url import host_of
from courtly.write_failure import RESUME_HINT

if TYPE_CHECKING:
    from tests.integration.conftest import (
        PER_IP,
        UA,
        LiveWeb,
        assert_polite,
        audit_web,
        crawl_command,
        crawl_config,
    )
else:  # tests/integration is no package: pytest imports its conftest as "conftest"
    from conftest import PER_IP, UA, LiveWeb, assert_polite, audit_web, crawl_command, crawl_config

pytestmark = pytest.mark.integration

COVERAGE_FLOOR = 0.97
"""As for one process (tests/integration/test_crawl.py). Measured on this web: one process
and two processes each fetched 217 of 217 reachable pages, in 14.6 s and 15.3 s."""


def finite_small_spec() -> SandboxSpec:
    """``SandboxSpec.small()`` without what keeps any crawl from ever running dry.

    A crawl ends only when its frontier is empty, and on the small web it never is:
    hosts whose robots.txt is unreachable (5xx, hanging, dead) keep their URLs for a
    later robots.txt retry, and the session-id trap yields new URLs for ever.
    """
    finite = tuple(v for v in ROBOTS_VARIANTS if v not in ("server_error", "hang"))
    return replace(SandboxSpec.small(), trap_hosts=0, dead_hosts=0, robots_variants=finite)


def _entry(url: str, depth: int = 1) -> QueuedUrl:
    return QueuedUrl(url, host_of(url), 1, depth)


def _config(state_dir: Path, **overrides: Any) -> CrawlConfig:
    values: dict[str, Any] = {"state_dir": state_dir, "user_agent": UA, "seeds": ()}
    values.update(overrides)
    return CrawlConfig(**values)


# -- ownership ----------------------------------------------------------------------------


def test_partitions_are_disjoint_and_cover_every_host(tmp_path: Path) -> None:
    hosts = [f"h{i}.site{i % 37}.test" for i in range(2_000)] + ["www.example.org:8080"]
    for processes in (2, 3, 4):
        partitions = [
            HostPartition(tmp_path / f"n{processes}", i, processes) for i in range(processes)
        ]
        try:
            owners = [[p.index for p in partitions if p.owns(host)] for host in hosts]
        finally:
            for partition in partitions:
                partition.close()
        assert all(len(found) == 1 for found in owners)
        assert [found[0] for found in owners] == [partition_of(h, processes) for h in hosts]
        shares = Counter(found[0] for found in owners)
        # A hash, not a range: every partition gets a fair share of the hosts.
        assert min(shares.values()) > len(hosts) / processes * 0.8, shares
        assert sum(p.primary for p in partitions) == 1


def test_stable_hash_is_the_same_in_another_process() -> None:
    hosts = ["www.site0.test", "shop1.site1.test:8080", "xn--bcher-kva.example"]
    code = (
        "import json, sys; from courtly.parallel import stable_hash; "
        "print(json.dumps([stable_hash(h) for h in sys.argv[1:]]))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code, *hosts],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345"},
    )
    assert json.loads(other.stdout) == [stable_hash(h) for h in hosts]


def test_partition_config_shares_out_fetchers_and_the_per_ip_cap(tmp_path: Path) -> None:
    config = _config(tmp_path, processes=2, per_ip=5, concurrency=33, back_queues=100)
    part = partition_config(config, 1)
    assert part.concurrency is not None and config.concurrency is not None
    assert part.state_dir == partition_dir(tmp_path, 1, 2) == tmp_path / "part-1-of-2"
    assert part.per_ip * 2 <= config.per_ip and part.per_ip == 2
    # An autoscaled count is not shared out: each process runs its own autoscaler.
    assert partition_config(replace(config, concurrency=None), 0).concurrency is None
    assert part.concurrency * 2 <= config.concurrency and part.concurrency == 16
    assert part.back_queues == 50
    with pytest.raises(ConfigError, match="per_ip = 2 cannot be shared by 3 processes"):
        partition_config(_config(tmp_path, processes=3, per_ip=2), 0)


# -- termination --------------------------------------------------------------------------


def _status(index: int, idle: bool, written: tuple[int, ...], consumed: tuple[int, ...]) -> Any:
    counts = FrontierCounts(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    snapshot = CrawlSnapshot(1.0, 0, 0.0, 0, 0, 0, 0, counts, {}, {}, {}, (), "", False, None)
    return PartitionStatus(index, 0, idle, written, consumed, snapshot)


def test_termination_needs_two_quiet_rounds_with_the_same_counters() -> None:
    detector = TerminationDetector()
    quiet = [_status(0, True, (0, 10), (0, 4)), _status(1, True, (4, 0), (10, 0))]
    assert not detector.observe(quiet)  # one quiet round is not enough
    assert detector.observe(quiet)

    detector = TerminationDetector()
    unread = [_status(0, True, (0, 10), (0, 4)), _status(1, True, (4, 0), (6, 0))]
    assert not detector.observe(unread)  # 4 bytes written to partition 1 not yet read
    assert not detector.observe(unread)

    detector = TerminationDetector()
    busy = [_status(0, True, (0, 10), (0, 4)), _status(1, False, (4, 0), (10, 0))]
    assert not detector.observe(quiet)
    assert not detector.observe(busy)  # a busy round resets
    assert not detector.observe(quiet)
    moved = [_status(0, True, (0, 20), (0, 4)), _status(1, True, (4, 0), (20, 0))]
    assert not detector.observe(moved)  # quiet, but the counters moved since the last round
    assert detector.observe(moved)


def test_probes_slow_down_while_urls_are_queued_and_speed_up_near_the_end() -> None:
    """A round where some partition has URLs queued cannot precede the end: the next
    round waits the busy interval; once nothing is queued (requests in flight at most),
    the short one, so the end is still seen soon after the last fetch."""
    idle = [_status(0, True, (0, 0), (0, 0)), _status(1, False, (0, 0), (0, 0))]
    queued = [idle[0], replace(idle[1], snapshot=_with_queued(idle[1].snapshot, 3))]
    assert probe_wait_s(queued, 0.1, 1.0) == 1.0
    assert probe_wait_s(idle, 0.1, 1.0) == 0.1


def _with_queued(snapshot: CrawlSnapshot, queued: int) -> CrawlSnapshot:
    return replace(snapshot, counts=replace(snapshot.counts, queued=queued))


# -- forwarding is durable ----------------------------------------------------------------


def test_forwarded_urls_survive_a_crash_and_are_queued_once(tmp_path: Path) -> None:
    root = tmp_path / "state"
    owned_by_1 = [
        f"http://h{i}.site.test/p{i}.html"
        for i in range(200)
        if partition_of(f"h{i}.site.test", 2) == 1
    ]
    entries = [_entry(url) for url in owned_by_1]
    referrer = "http://www.site.test/"

    async def forward_then_crash() -> None:
        sender = HostPartition(root, 0, 2, fsync=True)
        assert not any(sender.owns(e.host_key) for e in entries)
        await sender.forward(entries[:10], referrer)
        await sender.forward(entries[:10], referrer)  # found again: sent once
        await sender.forward(entries[10:], None)
        written = sender.outbox.written[1]
        sender.close()
        inbox = partition_dir(root, 1, 2) / "inbox" / "from-0.jsonl"
        assert inbox.stat().st_size == written
        with inbox.open("ab") as torn:  # a write cut short by the crash
            torn.write(b'["http://x/",[["http://h1.site.te')
        # The sender's next run drops the torn line before appending.
        again = HostPartition(root, 0, 2)
        assert again.outbox.written[1] == written == inbox.stat().st_size
        again.close()

    run_async(forward_then_crash())

    config = partition_config(_config(root, processes=2, per_ip=2), 1)

    async def receive(drop_offset: bool) -> tuple[list[AddStatus], int, int]:
        crawler = Crawler(config, partition=HostPartition(root, 1, 2))
        store = crawler.frontier.store
        try:
            if drop_offset:  # as if the crash came before the offset was committed
                await store.put_blob("partition", "inbox-from-0", b"0")
            receiver = HostPartition(root, 1, 2)
            await receiver.open_inbox(store)
            statuses: list[AddStatus] = []
            for chunk in receiver.read_inbox():
                statuses += await crawler.add_forwarded(chunk.entries, chunk.referrers)
                await receiver.consumed_to(store, chunk.source, chunk.end_offset)
            receiver.close()
            queued = (await crawler.frontier.counts()).queued
            referred = len([e async for e in store.catalogue() if e.referrer == referrer])
        finally:
            await crawler.frontier.aclose()
        return statuses, queued, referred

    statuses, queued, referred = run_async(receive(drop_offset=False))
    assert statuses == [AddStatus.QUEUED] * len(entries)
    assert queued == len(entries)
    assert referred == 10  # the ones found on a page carry it as referrer
    statuses, queued, _ = run_async(receive(drop_offset=False))
    assert statuses == []  # the stored offset: nothing is read twice
    assert queued == len(entries)
    statuses, queued, _ = run_async(receive(drop_offset=True))
    assert statuses == [AddStatus.SEEN] * len(entries)  # re-read: every URL a repeat
    assert queued == len(entries)


# -- a real 2-process crawl ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParallelRun:
    web: LiveWeb
    config: CrawlConfig
    snapshot: CrawlSnapshot
    records: tuple[RequestRecord, ...]
    elapsed_s: float


@pytest.fixture(scope="module")
def parallel_crawl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ParallelRun]:
    base = tmp_path_factory.mktemp("parallel")
    web = LiveWeb(finite_small_spec(), base / "web")
    try:
        # Autoscaled fetchers (the default): each process runs its own autoscaler. A 10 s
        # fetch timeout: a starved process can time out an answer that arrived in time, and
        # a robots.txt lost so holds its host for the robots.txt retry.
        config = crawl_config(
            web, base / "state", processes=2, concurrency=None, total_timeout_s=10.0
        )
        began = time.monotonic()
        snapshot = run_async(PartitionedCrawl(config).run())
        elapsed_s = time.monotonic() - began
        yield ParallelRun(web, config, snapshot, tuple(web.records()), elapsed_s)
    finally:
        web.stop()


def test_two_processes_finish_by_themselves_politely_and_cover_the_web(
    parallel_crawl: ParallelRun,
) -> None:
    run = parallel_crawl
    assert run.config.max_time_s is None and run.config.max_pages is None
    # Ended by itself (no time or page limit was given). No wall-clock bound: the crawl
    # takes about 15 s, spawning included, on a quiet machine and took 61.7 s under a
    # load of 12 on 2 cores; a crawl that never ended would hang here instead.
    assert run.snapshot.finished and run.snapshot.stop_reason == "done"
    report = audit(
        run.records,
        spec_or_truth=run.web.server.truth,
        min_delay_s=run.config.min_delay_s,
        per_ip_cap=PER_IP,  # the cap of the whole crawl, not of one process
        user_agent_token="courtly",
        seeds=run.config.seeds,
        follow_sitemaps=run.config.follow_sitemaps,
        tolerance_s=0.0,  # the sandbox's stamps are bounds on one clock (docs/sandbox.md)
    )
    print(f"2 processes, {run.elapsed_s:.1f} s:\n{report.summary()}")
    assert_polite(report)  # every check one process passes (tests/integration/test_crawl.py)
    assert report.hosts == len(run.web.server.world.hosts)
    assert report.coverage >= COVERAGE_FLOOR, report.summary()
    # Both processes did their share, and each kept to its own hosts.
    counts = run.snapshot.counts
    assert counts.queued == 0 and counts.leased == 0
    assert len(run.snapshot.warc_files) >= 2
    for index in range(2):
        assert (partition_dir(run.config.state_dir, index, 2) / "warc").is_dir()


GUARD_S = 120.0
"""How long a crawl process may take to stop or finish before the test calls it hung (a
guard against a hang, not a speed bound: the stop below took about 1 s, the resume 15 s)."""


def test_a_signal_stops_every_partition_and_the_resume_ends_politely(
    tmp_path: Path, serve_web: Callable[[SandboxSpec], LiveWeb]
) -> None:
    """``courtly crawl --processes 2``, Ctrl-C (SIGINT) mid-crawl: every partition stops
    leasing and finishes its requests in flight, the command exits with the signal's code
    and records where it stopped; the same command without ``--processes`` resumes with
    the recorded number and ends by itself. Over both runs' server log: every politeness
    check, no URL fetched twice, the web covered."""
    web = serve_web(finite_small_spec())
    state = tmp_path / "state"
    config = crawl_config(web, state, concurrency=None)
    command, first, log = _two_processes_under_way(web, tmp_path, "--progress-interval", "0.5")
    try:
        signalled_at = time.monotonic()
        first.send_signal(signal.SIGINT)
        code = first.wait(timeout=GUARD_S)
        print(f"stopped {time.monotonic() - signalled_at:.2f} s after SIGINT")
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert code == ExitCode.SIGNAL, log.read_text()
    assert state_dirs(state) == [partition_dir(state, i, 2) for i in range(2)]
    result = CliRunner().invoke(cli_main, ["status", "--state", str(state), "--json"])
    assert result.exit_code == 0, result.output
    stopped = json.loads(result.output)
    assert not stopped["running"]
    assert stopped["last_run"]["stop_reason"] == "signal"
    assert stopped["frontier"]["queued"] > 0  # stopped with work left
    assert stopped["frontier"]["leased"] == 0  # every request in flight was finished

    ended = _resume_to_the_end_politely(web, command, config, "stopped and resumed")
    assert ended["last_run"]["stop_reason"] == "done"
    assert ended["last_run"]["partitions"] == 2


def test_partitions_stop_by_themselves_when_their_parent_is_killed(
    tmp_path: Path, serve_web: Callable[[SandboxSpec], LiveWeb]
) -> None:
    """``courtly crawl --processes 2`` SIGKILLed mid-crawl (the parent only, as an OOM
    killer would): its partitions see the parent gone, stop leasing, finish their requests
    in flight and exit, and so does anything else it started; nothing holds the state
    directory afterwards, and the same command resumes the crawl and ends it politely."""
    web = serve_web(finite_small_spec())
    config = crawl_config(web, tmp_path / "state", concurrency=None)
    command, first, log = _two_processes_under_way(web, tmp_path)
    try:
        started = psutil.Process(first.pid).children(recursive=True)
        first.kill()
        first.wait()
        _gone, alive = psutil.wait_procs(started, timeout=GUARD_S)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    for process in alive:  # only after a failed check: leave nothing behind
        process.kill()
    assert len(started) >= 2, "the crawl started no partitions"
    assert not alive, f"left running after their parent was killed: {alive}\n{log.read_text()}"
    said = re.findall(r"(part-\d) courtly.parallel: the parent process is gone", log.read_text())
    assert sorted(said) == ["part-0", "part-1"]  # once each (it was said at every poll)
    state = str(config.state_dir)
    result = CliRunner().invoke(cli_main, ["status", "--state", state, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["running"] is False

    _resume_to_the_end_politely(web, command, config, "parent killed, resumed")


def test_a_partition_killed_mid_crawl_fails_the_crawl_with_a_message_and_it_resumes(
    tmp_path: Path, serve_web: Callable[[SandboxSpec], LiveWeb]
) -> None:
    """One partition SIGKILLed mid-crawl (an OOM killer's choice): the crawl stops with one
    ``Error:`` line naming the partition and the signal, exit 1 (it failed: not refused
    input, exit 2), no traceback; the same command resumes it to its end. Over both runs'
    log: no politeness rule broken, repeats only of what the killed partition had in
    flight or had not committed, the web covered."""
    web = serve_web(finite_small_spec())
    config = crawl_config(web, tmp_path / "state", concurrency=None)
    command, first, log = _two_processes_under_way(web, tmp_path)
    try:
        partitions = [  # not the resource tracker multiprocessing also starts
            child
            for child in psutil.Process(first.pid).children()
            if "spawn_main" in " ".join(child.cmdline())
        ]
        assert len(partitions) == 2, "the crawl did not start two partitions"
        partitions[0].kill()
        code = first.wait(timeout=GUARD_S)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    text = log.read_text()
    assert code == ExitCode.FAILED, text
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "killed by SIGKILL" in errors[0], text
    assert errors[0].endswith(RESUME_HINT), errors[0]
    # The partition that went on says why it stopped, in the record status reads.
    status = CliRunner().invoke(cli_main, ["status", "--state", str(config.state_dir)])
    assert status.exit_code == 0, status.output
    assert re.search(r"why +partition [01]: killed by SIGKILL", status.output), status.output

    resumed = subprocess.run(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=GUARD_S
    )
    assert resumed.returncode == ExitCode.DONE, resumed.stderr.decode()
    report = audit_web(web, min_delay_s=config.min_delay_s, tolerance_s=0.0)
    assert report.violations == report.duplicate_fetches, report.summary()
    assert report.coverage >= COVERAGE_FLOOR, report.summary()


def _two_processes_under_way(
    web: LiveWeb, tmp_path: Path, *flags: str
) -> tuple[list[str], subprocess.Popen[bytes], Path]:
    """``courtly crawl --processes 2`` of ``web`` into ``tmp_path / "state"`` (logging to
    ``tmp_path / "crawl.log"``), once the web has served 40 requests: the command (without
    ``--processes``), the running process and its log."""
    command = crawl_command(web, tmp_path / "state", "--timeout", "10", *flags)
    log = tmp_path / "crawl.log"
    with log.open("ab") as err:
        first = subprocess.Popen([*command, "--processes", "2"], stdout=err, stderr=err)
    deadline = time.monotonic() + GUARD_S
    while web.server.requests_logged < 40 and first.poll() is None:
        if time.monotonic() >= deadline:
            first.kill()
            first.wait()
            raise AssertionError(log.read_text())
        time.sleep(0.01)
    return command, first, log


def _resume_to_the_end_politely(
    web: LiveWeb, command: list[str], config: CrawlConfig, label: str
) -> dict[str, Any]:
    """Run ``command`` (the interrupted crawl's, without ``--processes``) to its end; its
    frontier ends empty, and the server's log of both runs passes every politeness check
    (duplicates included: a partition that stops finishes what it started) and covers the
    web. Returns ``courtly status --json`` after it."""
    resumed = subprocess.run(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=GUARD_S
    )
    assert resumed.returncode == ExitCode.DONE, resumed.stderr.decode()
    state = str(config.state_dir)
    result = CliRunner().invoke(cli_main, ["status", "--state", state, "--json"])
    ended: dict[str, Any] = json.loads(result.output)
    assert ended["frontier"]["queued"] == 0 and ended["frontier"]["leased"] == 0
    report = audit_web(
        web,
        min_delay_s=config.min_delay_s,
        follow_sitemaps=config.follow_sitemaps,
        tolerance_s=0.0,
    )
    print(f"2 processes, {label}:\n{report.summary()}")
    assert_polite(report)
    assert report.coverage >= COVERAGE_FLOOR, report.summary()
    return ended


def _written_by_owner(row: dict[str, Any]) -> bool:
    reason = row["skip_reason"]
    return reason is None or reason == "robots" or reason.startswith("error:")


def test_status_and_export_read_every_partition(parallel_crawl: ParallelRun) -> None:
    run = parallel_crawl
    state = run.config.state_dir
    runner = CliRunner()
    result = runner.invoke(cli_main, ["status", "--state", str(state), "--json"])
    assert result.exit_code == 0, result.output
    status = json.loads(result.output)
    assert status["last_run"]["pages"] == run.snapshot.pages
    assert status["last_run"]["finished"] and status["last_run"]["partitions"] == 2
    assert status["frontier"]["seen"] == run.snapshot.counts.seen

    out = state.parent / "catalogue.jsonl"
    result = runner.invoke(cli_main, ["export", "--state", str(state), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # A URL is catalogued once, by the partition owning its host; only a link skipped where
    # it was found (out of scope, a trap) is catalogued by every partition that found it.
    owned = [row["url"] for row in rows if _written_by_owner(row)]
    assert len(owned) == len(set(owned))
    assert len(owned) > len(rows) / 2
    fetched = [row for row in rows if row.get("status") is not None]
    assert len(fetched) == run.snapshot.pages
    # A fetched page's warc_file names one file of the whole crawl (the partitions' WARC
    # files never share a name), and its record there is that page's response.
    files = [path for d in state_dirs(state) for path in (d / "warc").glob("*.warc.gz")]
    by_name = Counter(path.name for path in files)
    assert by_name and set(by_name.values()) == {1}
    where = {path.name: path for path in files}
    for row in fetched:
        with where[row["warc_file"]].open("rb") as archive:
            archive.seek(row["warc_offset"])
            record = gzip.decompress(archive.read(row["warc_length"]))
        assert b"WARC-Type: response\r\n" in record
        assert f"WARC-Target-URI: {row['url']}\r\n".encode() in record
    # Every partition's catalogue holds its own hosts' pages only.
    for index, directory in enumerate(state_dirs(state)):
        result = runner.invoke(cli_main, ["export", "--state", str(directory), "-o", str(out)])
        assert result.exit_code == 0, result.output
        own = [json.loads(line) for line in out.read_text().splitlines()]
        assert own
        for row in own:
            if row.get("status") is not None:
                assert partition_of(host_of(row["url"]), 2) == index, row["url"]


def test_a_resume_with_another_number_of_processes_is_refused(
    parallel_crawl: ParallelRun, tmp_path: Path
) -> None:
    state = parallel_crawl.config.state_dir
    assert json.loads((state / LAYOUT_FILE).read_text())["processes"] == 2
    web = parallel_crawl.web
    for processes in ("1", "3"):
        result = CliRunner().invoke(
            cli_main,
            [
                "crawl",
                "--state",
                str(state),
                "--user-agent",
                UA,
                "--per-ip",
                "4",
                "--processes",
                processes,
                *web.server.seeds,
            ],
        )
        assert result.exit_code == 2, result.output
        assert "partitioned over 2 processes; resume it with --processes 2" in result.output
    with pytest.raises(StateError, match="resume it with --processes 2"):
        claim_layout(state, 4)
    # And a single-process state directory refuses to become a partitioned one.
    single = tmp_path / "single"
    single.mkdir()
    (single / "frontier.sqlite3").write_bytes(b"")
    with pytest.raises(StateError, match="single-process crawl; resume it with --processes 1"):
        claim_layout(single, 2)
    assert not (single / LAYOUT_FILE).exists()
    claim_layout(single, 1)


def test_a_crawl_stopped_as_its_partitions_began_is_not_resumed_without_its_seeds(
    tmp_path: Path,
) -> None:
    """A crawl stopped while it started leaves its layout and, at most, some partitions'
    state. With none, there is nothing to resume (the partitions each said "nothing to
    crawl" before); with some, a resume without seeds is refused, as the missing
    partitions' seeds are gone; given the seeds again, the refusal is lifted."""
    state = tmp_path / "state"
    claim_layout(state, 2)
    args = ["crawl", "--state", str(state), "--user-agent", UA, "--processes", "2"]
    result = CliRunner().invoke(cli_main, args)
    assert result.exit_code == 2, result.output
    assert "holds no crawl to resume (give SEED... or --seeds-file)" in result.output
    part0 = partition_dir(state, 0, 2)
    part0.mkdir()
    (part0 / "frontier.sqlite3").write_bytes(b"")  # a partition that began
    result = CliRunner().invoke(cli_main, args)
    assert result.exit_code == 2, result.output
    assert "partition 1 of 2 holds no crawl state" in result.output
    assert "Give the crawl's seeds again" in result.output
    assert not partition_dir(state, 1, 2).exists()  # refused before any partition started
    assert partitions_without_state(state, 2) == [1]
    # a partition whose archive outlived its state: refused, seeds or not, as a
    # single-process crawl is (a new crawl would append to that archive)
    (partition_dir(state, 1, 2) / "warc").mkdir(parents=True)
    (partition_dir(state, 1, 2) / "warc" / "courtly-0badcafe-00000.warc.gz").write_bytes(b"")
    result = CliRunner().invoke(cli_main, [*args, "http://www.example.test/"])
    assert result.exit_code == 2, result.output
    assert "part-1-of-2/warc holds 1 WARC file(s) of an earlier crawl but" in result.output
    (partition_dir(state, 1, 2) / "frontier.sqlite3").write_bytes(b"")
    assert partitions_without_state(state, 2) == []


def test_merged_counts_are_field_sums() -> None:
    a = FrontierCounts(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
    b = FrontierCounts(10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110)
    assert merge_counts([a, b]) == FrontierCounts(11, 22, 33, 44, 55, 66, 77, 88, 99, 110, 121)


# -- the default number of processes ----------------------------------------------------------


def test_default_processes_is_the_cores_capped_by_per_ip_and_a_resume_keeps_its_number(
    tmp_path: Path,
) -> None:
    fresh = tmp_path / "fresh"
    assert default_processes(fresh, per_ip=8, cores=4) == 4
    assert default_processes(fresh, per_ip=2, cores=4) == 2  # each process needs one per IP
    assert default_processes(fresh, per_ip=2, cores=1) == 1
    assert default_processes(fresh, per_ip=2) == min(available_cores(), 2)
    single = tmp_path / "single"
    single.mkdir()
    (single / "frontier.sqlite3").write_bytes(b"")
    assert default_processes(single, per_ip=8, cores=4) == 1
    partitioned = tmp_path / "partitioned"
    claim_layout(partitioned, 3)
    assert default_processes(partitioned, per_ip=8, cores=16) == 3


def test_cli_crawl_without_processes_uses_the_default(tmp_path: Path, small_web: LiveWeb) -> None:
    state = tmp_path / "state"
    config = crawl_config(small_web, state)
    expected = default_processes(state, per_ip=PER_IP)
    hosts_file = config.hosts_file
    assert hosts_file is not None
    args = [
        "crawl",
        "--state",
        str(state),
        "--user-agent",
        UA,
        "--hosts-file",
        str(hosts_file),
        "--allow-private-networks",
        "--min-delay",
        str(config.min_delay_s),
        "--per-ip",
        str(PER_IP),
        "--max-pages",
        "10",
        "--progress-interval",
        "0.5",
        *config.seeds,
    ]
    result = CliRunner().invoke(cli_main, args, catch_exceptions=False)
    assert result.exit_code == ExitCode.LIMIT, result.output  # stopped by --max-pages
    assert (state / LAYOUT_FILE).exists() == (expected > 1)
    assert state_dirs(state) == (
        [partition_dir(state, i, expected) for i in range(expected)] if expected > 1 else [state]
    )


def test_a_resume_with_changed_settings_says_each_change_once(
    tmp_path: Path, small_web: LiveWeb
) -> None:
    """Two partitions resume a crawl with another --min-delay: one warning, not one a
    partition."""
    state = tmp_path / "state"
    command = crawl_command(small_web, state, "--processes", "2", "--max-pages", "5")
    first = subprocess.run(command, capture_output=True, text=True, timeout=GUARD_S)
    assert first.returncode == ExitCode.LIMIT, first.stderr
    again = subprocess.run(
        [*command, "--min-delay", "0.03"], capture_output=True, text=True, timeout=GUARD_S
    )
    assert again.returncode == ExitCode.LIMIT, again.stderr
    warning = "resuming with a changed configuration: min_delay_s: 0.05 -> 0.03"
    assert again.stderr.count(warning) == 1, again.stderr


def test_a_partitioned_crawl_of_blocked_addresses_ends_with_nothing_fetchable(
    tmp_path: Path,
) -> None:
    # Hosts of both partitions, all refused by the address guard: no server needed.
    seeds = tuple(f"http://127.0.0.{i}:9/" for i in range(3, 9))
    assert len({partition_of(host_of(s), 2) for s in seeds}) == 2
    config = _config(tmp_path / "state", seeds=seeds, processes=2, progress_interval_s=0.5)
    snapshot = run_async(PartitionedCrawl(config).run())
    assert snapshot.stop_reason == "nothing_fetchable"
    assert snapshot.stop_detail is not None and "--allow-private-networks" in snapshot.stop_detail
    assert snapshot.hosts_retired == {"blocked": len(seeds)}
    assert snapshot.pages == 0
    result = CliRunner().invoke(cli_main, ["status", "--state", str(config.state_dir), "--json"])
    assert result.exit_code == 0, result.output
    last_run = json.loads(result.output)["last_run"]
    assert last_run["stop_reason"] == "nothing_fetchable"
    assert last_run["stop_detail"] == snapshot.stop_detail


@pytest.mark.parametrize("max_pages", [1, 2, 7])
def test_a_partitioned_crawl_makes_exactly_max_pages(
    tmp_path: Path, small_web: LiveWeb, max_pages: int
) -> None:
    """Both partitions claim from one shared --max-pages before each fetch: the pages made
    (reported and catalogued) are exactly the budget, never one more."""
    state = tmp_path / "state"
    config = crawl_config(small_web, state, processes=2, max_pages=max_pages, max_time_s=120.0)
    snapshot = run_async(PartitionedCrawl(config).run())
    assert (snapshot.stop_reason, snapshot.pages) == ("max_pages", max_pages), snapshot
    out = tmp_path / "catalogue.jsonl"
    result = CliRunner().invoke(cli_main, ["export", "--state", str(state), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len([row for row in rows if row.get("status") is not None]) == max_pages


class _Lines:
    """A progress sink that keeps each update with the moment it came."""

    def __init__(self) -> None:
        self.updates: list[tuple[float, CrawlSnapshot]] = []

    def update(self, snapshot: CrawlSnapshot) -> None:
        self.updates.append((time.monotonic(), snapshot))

    def close(self, snapshot: CrawlSnapshot) -> None:
        pass


def test_progress_goes_on_while_the_partitions_finish_and_never_repeats_a_line(
    tmp_path: Path, serve_web: Callable[[SandboxSpec], LiveWeb]
) -> None:
    """While stopping, the partitions finish their requests in flight (here robots.txt
    that never answer, cut short by the grace): the progress lines go on with fresh
    figures, and no line repeats the one before it. Before, the parent stopped asking
    the partitions once it had relayed the stop and printed their last figures again at
    every interval, the elapsed time frozen."""
    spec = SandboxSpec(
        n_sites=1,
        hosts_per_site=4,
        robots_variants=("hang",),
        hang_s=60.0,
        slow_hosts=0,
        flaky_hosts=0,
        dead_hosts=0,
        trap_hosts=0,
        hostile_hosts=0,
    )
    web = serve_web(spec)
    config = crawl_config(
        web, tmp_path / "state", processes=2, progress_interval_s=0.2, stop_grace_s=2.0
    )
    lines = _Lines()
    crawl = PartitionedCrawl(config, progress=lines)

    async def run() -> tuple[float, CrawlSnapshot]:
        task = asyncio.create_task(crawl.run())
        while not any(s.in_flight for _, s in lines.updates):  # the robots.txt hang
            assert not task.done()
            await asyncio.sleep(0.05)
        stopped_at = time.monotonic()
        crawl.request_stop("signal")
        return stopped_at, await task

    stopped_at, final = run_async(run())
    assert final.stop_reason == "signal"
    snapshots = [s for _, s in lines.updates]
    assert all(a != b for a, b in itertools.pairwise(snapshots)), "a progress line repeated"
    after = [s for at, s in lines.updates if at > stopped_at + 0.5]
    assert after, "no progress line while the partitions finished"
    assert after[-1].elapsed_s > max(s.elapsed_s for at, s in lines.updates if at <= stopped_at)
