"""``kill -9`` at random moments, resume with the same command: nothing lost, still polite.

A real ``python -m courtly crawl ... --state DIR`` process crawls a sandbox web
and is killed with SIGKILL at seeded random moments (every other run 0.3-2 s after
its start, start-up included; the others 0-1 s after their first request, so that
kills land mid-crawl however slow start-up is), at least :data:`KILLS` times, then
resumed with the same command until it ends by itself with an empty frontier. An uninterrupted crawl
of an identical fresh sandbox is the reference. Then, from the server's logs:

* the set of URLs fetched is the reference's set: nothing lost;
* a URL is fetched again after a final answer only because of a kill that came
  before the crawler had committed that answer: the catalogue, read from the state
  right after each kill (what the crawler recorded, not how long ago the server
  answered), does not hold the URL as answered. At no kill does the crawler hold more
  answered but uncommitted pages than the leases that can be in flight
  (``CONCURRENCY``), so only the requests in flight repeat, and none repeats more.
  This holds with the default ``durability="crash"`` (every step commits); ``"power"``
  batches commits and may repeat a commit window's worth (see docs/state.md);
* the politeness audit over the whole log, restarts included, finds nothing but
  those repeats;
* every WARC file reads back with warcio to its last byte (torn tails, including one
  made on purpose halfway, were cut on resume) and every fetched catalogue entry
  points at a response record for its URL.

The web leaves out what never ends (unreachable robots.txt, dead hosts, traps) and
the gzip bomb and huge page (slow to repeat); the other tests cover those.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from courtly.archive.catalogue import CatalogueEntry
from courtly.cli import main as cli_main
from courtly.sandbox import RequestRecord, SandboxSpec, SandboxTruth, audit
from courtly.sandbox.urls import split_url

if TYPE_CHECKING:
    from tests.integration.conftest import (
        PER_IP,
        LiveWeb,
        catalogue_of,
        crawl_command,
        crawl_config,
        warc_responses,
    )
else:  # tests/integration is no package: pytest imports its conftest as "conftest"
    from conftest import (
        PER_IP,
        LiveWeb,
        catalogue_of,
        crawl_command,
        crawl_config,
        warc_responses,
    )

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SEED = 20_240_611
KILLS = 10
KILL_AFTER_S = (0.3, 2.0)
KILL_WHILE_FETCHING_S = (0.0, 1.0)
"""Every other run is killed this long after its first request (see the module doc)."""
MIN_DELAY_S = 0.02
CONCURRENCY = 8
RUN_TIMEOUT_S = 60.0

CRASH_SPEC = replace(
    SandboxSpec.small(),
    robots_variants=(
        "rules",
        "crawl_delay",
        "missing",
        "redirect",
        "wildcard",
        "token_blocked",
        "token_open",
    ),
    dead_hosts=0,
    trap_hosts=0,
    hostile_hosts=0,
    slow_s=0.02,
    pages_per_host=20,
    crawl_delay_s=0.25,
)
"""Every host keeps being crawled until its end; two Crawl-delay hosts make the crawl last
(~12 s uninterrupted) so that every kill lands in the middle of it."""


@dataclass(frozen=True, slots=True)
class Repeat:
    """A fetch of a URL that already had a final answer, and the kill that explains it."""

    url: str
    first: RequestRecord
    again: RequestRecord
    kill_at: float | None
    """The first kill after the first fetch began, if before the second (None: no kill
    between them). A kill is timed once the process is dead."""
    committed: bool
    """Whether the catalogue held the URL as answered right after that kill (the crawler
    had committed the first answer, and still fetched it again: unexplained)."""
    requests: int = 1
    """The fetch again and its own retries (after a 429 or 503 answer to it) until a final
    answer: each is a request after a final answer, which the audit counts as a duplicate."""

    @property
    def explained(self) -> bool:
        """A kill came between the two fetches, before the first answer was committed."""
        return self.kill_at is not None and not self.committed


def _command(web: LiveWeb, state: Path) -> list[str]:
    # one process: the kills and the resume look at its one state file
    flags = ["--concurrency", str(CONCURRENCY), "--processes", "1", "--progress-interval", "0.5"]
    return crawl_command(web, state, *flags, min_delay_s=MIN_DELAY_S)


def _start(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as err:
        return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)


def _run_to_end(command: list[str], log: Path) -> int:
    proc = _start(command, log)
    try:
        return proc.wait(timeout=RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _status(state: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli_main, ["status", "--state", str(state), "--json"])
    assert result.exit_code == 0, result.output
    status: dict[str, Any] = json.loads(result.output)
    return status


def _catalogue(web: LiveWeb, state: Path) -> list[CatalogueEntry]:
    return catalogue_of(crawl_config(web, state, min_delay_s=MIN_DELAY_S))


def _readable(path: Path) -> bool:
    """Whether warcio reads ``path`` record by record to its very last byte, digests checked.

    (warcio stops quietly at a torn last gzip member, so the end is checked too.)
    """
    end = 0
    try:
        with path.open("rb") as handle:
            records = ArchiveIterator(handle, check_digests="raise")
            for record in records:
                record.content_stream().read()
                if record.digest_checker.passed is False:
                    return False
                end = records.get_record_offset() + records.get_record_length()
    except (ArchiveLoadFailed, OSError, ValueError, EOFError):
        return False
    return end == path.stat().st_size


def _tear(path: Path) -> None:
    """Append the first half of a gzip member holding a record: a torn last record."""
    record = b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 4000\r\n\r\n" + bytes(4000)
    member = gzip.compress(record + b"\r\n\r\n")
    with path.open("ab") as handle:
        handle.write(member[: len(member) // 2])


def _page_key(truth: SandboxTruth, rec: RequestRecord) -> tuple[str, str] | None:
    """(host, path) of a page request; None for robots.txt (refetched by design)."""
    if truth.is_robots_path(rec.host, rec.path):
        return None
    return rec.host, rec.path


def _fetched(truth: SandboxTruth, records: list[RequestRecord]) -> set[tuple[str, str]]:
    return {key for rec in records if (key := _page_key(truth, rec)) is not None}


def _final(status: int) -> bool:
    """An answer after which the URL is done (not a throttle, a server error, no answer)."""
    return status not in (0, 408, 429) and status < 500


def _answered(entries: list[CatalogueEntry]) -> set[tuple[str, str]]:
    """(host, path) of every URL the catalogue holds with a final answer: committed."""
    out: set[tuple[str, str]] = set()
    for entry in entries:
        if entry.status is not None and _final(entry.status):
            host, _, path = split_url(entry.url)
            out.add((host, path))
    return out


def _repeats(
    truth: SandboxTruth,
    records: list[RequestRecord],
    kills_at: list[float],
    committed: list[set[tuple[str, str]]],
) -> list[Repeat]:
    """Fetches after a final answer (what the audit counts as duplicates), each with the
    latest earlier final answer, the kill that undid it (the first one after it) and
    whether the catalogue held that URL as answered right after that kill (``committed``:
    one set per kill, :func:`_answered`). One repeat per final answer: the fetch that
    asks for the URL again; its own retries (after a 429 or 503 answer to it, before a
    final one) are that repeat's, not more repeats."""
    final: dict[tuple[str, str], RequestRecord] = {}
    repeated: dict[tuple[str, str], int] = {}  # URL asked again since its latest final answer
    # -> its repeat's index in found
    found: list[Repeat] = []
    for rec in records:
        key = _page_key(truth, rec)
        if key is None:
            continue
        if key in repeated:  # a retry of the repeat under way
            i = repeated[key]
            found[i] = replace(found[i], requests=found[i].requests + 1)
        elif key in final:
            repeated[key] = len(found)
            first = final[key]
            between = [i for i, k in enumerate(kills_at) if first.start_at <= k <= rec.start_at]
            url = f"{key[0]}{key[1]}"
            kill = between[0] if between else None
            found.append(
                Repeat(
                    url,
                    first,
                    rec,
                    None if kill is None else kills_at[kill],
                    kill is not None and key in committed[kill],
                )
            )
        if _final(rec.status):
            final[key] = rec
            repeated.pop(key, None)
    return found


def _in_flight(records: list[RequestRecord], kill_at: float) -> int:
    """Requests the server was still answering when the crawler was killed."""
    return sum(1 for rec in records if rec.start_at <= kill_at <= rec.end_at)


def _uncommitted(
    truth: SandboxTruth,
    records: list[RequestRecord],
    began_at: float,
    kill_at: float,
    committed: set[tuple[str, str]],
) -> int:
    """Pages the killed run asked for (its requests began after ``began_at``) and the
    server answered for good, whose answer the catalogue did not hold after the kill:
    what the kill can undo. Each holds a lease until its answer is committed."""
    return len(
        {
            key
            for rec in records
            if began_at <= rec.start_at <= kill_at
            and _final(rec.status)
            and (key := _page_key(truth, rec)) is not None
            and key not in committed
        }
    )


def _until_requests(web: LiveWeb, count: int, proc: subprocess.Popen[bytes]) -> None:
    """Wait until the sandbox has logged ``count`` requests in all (or the crawl ended)."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while web.server.requests_logged < count and proc.poll() is None:
        assert time.monotonic() < deadline, f"no request within {RUN_TIMEOUT_S} s"
        time.sleep(0.01)


def test_kill_9_at_random_moments_loses_nothing(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    began = time.monotonic()

    # The reference: one uninterrupted crawl of an identical, fresh sandbox.
    reference_web = LiveWeb(CRASH_SPEC, tmp_path / "reference-web")
    try:
        ref_state = tmp_path / "reference-state"
        rc = _run_to_end(_command(reference_web, ref_state), tmp_path / "reference.log")
        assert rc == 0, (tmp_path / "reference.log").read_text()
        ref_catalogue = _catalogue(reference_web, ref_state)
    finally:
        reference_web.stop()
    ref_records = reference_web.records()
    reference_s = time.monotonic() - began
    ref_truth = reference_web.server.truth

    # The crashed crawl.
    web = LiveWeb(CRASH_SPEC, tmp_path / "web")
    state = tmp_path / "state"
    log = tmp_path / "crawl.log"
    command = _command(web, state)
    kills_at: list[float] = []
    runs_began_at: list[float] = []  # when each killed run was started
    committed: list[set[tuple[str, str]]] = []  # the catalogue's answered URLs at each kill
    torn_tails = torn_on_purpose = 0
    runs = 0
    try:
        while len(kills_at) < KILLS:
            runs += 1
            logged_before = web.server.requests_logged
            began_at = time.time()
            proc = _start(command, log)
            kill_after_s = KILL_AFTER_S
            if runs % 2 == 0:
                # Every other kill lands while the crawl is fetching: on a loaded machine
                # start-up alone can outlast KILL_AFTER_S, and only start-up would be killed.
                _until_requests(web, logged_before + 1, proc)
                kill_after_s = KILL_WHILE_FETCHING_S
            try:
                rc = proc.wait(timeout=rng.uniform(*kill_after_s))
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                kills_at.append(time.time())  # dead by now: nothing it sent is later
                runs_began_at.append(began_at)
                committed.append(_answered(_catalogue(web, state)))
            else:
                pytest.fail(
                    f"the crawl ended (rc {rc}) after {len(kills_at)} kills: the web is too "
                    f"small for {KILLS} kills\n{log.read_text()[-2000:]}"
                )
            warcs = sorted((state / "warc").glob("*.warc.gz"))
            torn_tails += bool(warcs) and not _readable(warcs[-1])
            if len(kills_at) >= KILLS // 2 and warcs and not torn_on_purpose:
                # The records are flushed one by one, so kill -9 seldom tears one: tear one
                # the way a power cut would, and let the resume cut it.
                _tear(warcs[-1])
                assert not _readable(warcs[-1])
                torn_on_purpose += 1
        final_runs = 0
        while True:
            final_runs += 1
            runs += 1
            rc = _run_to_end(command, log)
            status = _status(state)
            if status["last_run"]["stop_reason"] == "done" or final_runs >= 3:
                break
        assert rc == 0, log.read_text()[-2000:]
        catalogue = _catalogue(web, state)
    finally:
        web.stop()
    records = web.records()
    truth = web.server.truth
    elapsed_s = time.monotonic() - began

    assert status["last_run"]["finished"] and status["last_run"]["stop_reason"] == "done"
    assert status["frontier"]["queued"] == 0

    # Nothing lost: the same URLs were fetched, and the catalogue knows every one of them.
    reference = _fetched(ref_truth, ref_records)
    crashed = _fetched(truth, records)
    assert len(reference) > 200
    assert crashed == reference, (sorted(reference - crashed), sorted(crashed - reference))

    def fetched_paths(entries: list[CatalogueEntry]) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for entry in entries:
            if entry.status is not None:
                host, _, path = split_url(entry.url)
                out.add((host, path))
        return out

    assert fetched_paths(catalogue) == fetched_paths(ref_catalogue)

    # Repeats: only what a kill explains, bounded by the requests it could have cut short.
    repeats = _repeats(truth, records, kills_at, committed)
    in_flight = [_in_flight(records, at) for at in kills_at]
    exposed = [
        _uncommitted(truth, records, began, at, done)
        for began, at, done in zip(runs_began_at, kills_at, committed, strict=True)
    ]
    per_kill = Counter(r.kill_at for r in repeats)
    repeated = [per_kill.get(at, 0) for at in kills_at]
    summary = (
        f"{len(kills_at)} kills in {runs} runs; torn WARC tails {torn_tails} "
        f"(+{torn_on_purpose} made); "
        f"repeats {len(repeats)} (per kill {repeated}; bound kills x concurrency "
        f"{len(kills_at) * CONCURRENCY}); answered but not committed per kill {exposed}; "
        f"server-side in flight at the kills {in_flight}; "
        f"worst answer-to-kill "
        f"{max((r.kill_at - r.first.end_at for r in repeats if r.kill_at), default=0.0):.3f} s; "
        f"reference {reference_s:.1f} s, total {elapsed_s:.1f} s; "
        f"requests {len(records)} vs {len(ref_records)} uninterrupted"
    )
    print(summary)
    unexplained = [r for r in repeats if not r.explained]
    assert not unexplained, (summary, unexplained[:5])
    # Only the requests in flight repeat: at a kill the crawler holds at most as many
    # answered, uncommitted pages as it has leases (every step commits before the next
    # lease), and a kill undoes at most those.
    assert all(n <= CONCURRENCY for n in exposed), summary
    assert all(n <= bound for n, bound in zip(repeated, exposed, strict=True)), summary
    assert not _repeats(ref_truth, ref_records, [], []), "the uninterrupted crawl repeated itself"
    assert torn_on_purpose == 1

    # Politeness over the whole log, restarts included; duplicates only as explained above.
    report = audit(
        records,
        spec_or_truth=truth,
        min_delay_s=MIN_DELAY_S,
        per_ip_cap=PER_IP,
        user_agent_token="courtly",
        seeds=web.server.seeds,
        follow_sitemaps=True,
    )
    # each repeat is one fetch again and its own retries (a 429 before the 200, say)
    assert report.duplicate_fetches == sum(r.requests for r in repeats), report.summary()
    assert report.violations - report.duplicate_fetches == 0, (summary, report.summary())
    assert report.max_in_flight_per_host == 1, report.summary()
    assert report.coverage == 1.0, report.summary()

    # The archive: every file reads to the end; the catalogue points at the right records.
    responses = warc_responses([state / "warc"])
    fetched = [entry for entry in catalogue if entry.status is not None]
    assert len(fetched) == len(reference)
    for entry in fetched:
        assert entry.warc_file is not None and entry.warc_offset is not None, entry
        assert responses.get((entry.warc_file, entry.warc_offset)) == entry.url, entry
