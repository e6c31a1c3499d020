"""A write that fails mid-crawl (a full disk): a message and exit 1, and a resume that
loses nothing.

A real ``python -m courtly crawl`` crawls a sandbox web with a file size limit
(``RLIMIT_FSIZE``, set in the child before it starts): the first write of the state
(the SQLite WAL) or of the archive (a WARC file) past it fails as a write to a full disk
does, with an error from the kernel. The crawl must end with one ``Error:`` line that
says what failed and how to go on, exit 1 (it ran: not refused input), no traceback;
then the same command without the limit resumes it to its end, and:

* the politeness audit over the whole log finds nothing but repeats, and no more of
  those than the requests the failure could have left unrecorded (one a lease);
* every reachable page was fetched, and the catalogue knows it;
* every WARC file reads back to its last byte (the failed write was cut back) and
  every fetched catalogue entry points at a response record for its URL.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner
from tests.file_limit import with_file_limit

from courtly.cli import main as cli_main
from courtly.sandbox import SandboxSpec
from courtly.write_failure import RESUME_HINT

if TYPE_CHECKING:
    from tests.integration.conftest import LiveWeb, audit_web, crawl_command, warc_responses
else:  # tests/integration is no package: pytest imports its conftest as "conftest"
    from conftest import LiveWeb, audit_web, crawl_command, warc_responses

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CONCURRENCY = 8
FILE_LIMIT_BYTES = 192 * 1024
"""Far less than the crawl writes (a WARC file of the web is about 2 MB)."""
RUN_TIMEOUT_S = 90.0

SPEC = replace(
    SandboxSpec.small(),
    robots_variants=("rules", "missing", "redirect", "wildcard"),
    dead_hosts=0,
    trap_hosts=0,
    hostile_hosts=0,
    slow_s=0.0,
    pages_per_host=30,
    crawl_delay_s=0.0,
)
"""Every host is crawled to its end, quickly: nothing that never ends (dead hosts, traps,
a robots.txt that hangs)."""


def _command(web: LiveWeb, state: Path, processes: int) -> list[str]:
    flags = ["--concurrency", str(CONCURRENCY), "--processes", str(processes), "-q"]
    return crawl_command(web, state, *flags)


def _run(command: list[str], *, limited: bool) -> subprocess.CompletedProcess[str]:
    if limited:
        command = with_file_limit(command, FILE_LIMIT_BYTES)
    return subprocess.run(
        command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )


@pytest.mark.parametrize("processes", [1, 2])
def test_a_full_disk_ends_the_crawl_with_a_message_and_the_resume_loses_nothing(
    tmp_path: Path, processes: int
) -> None:
    web = LiveWeb(SPEC, tmp_path / "web")
    state = tmp_path / "state"
    command = _command(web, state, processes)
    try:
        failed = _run(command, limited=True)
        resumed = _run(command, limited=False)
    finally:
        web.stop()

    # The failure: one message that names what failed and says how to go on.
    assert failed.returncode == 1, failed.stderr[-3000:]
    assert "Traceback" not in failed.stderr, failed.stderr[-3000:]
    errors = [line for line in failed.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, failed.stderr[-3000:]
    assert "failed (" in errors[0] and errors[0].endswith(RESUME_HINT), errors[0]
    assert ("frontier.sqlite3" in errors[0]) or (".warc.gz" in errors[0]), errors[0]

    # The resume: to the end, polite, nothing lost.
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    report = audit_web(web)
    repeats = report.duplicate_fetches
    assert repeats <= processes * CONCURRENCY, report.summary()  # one a lease at most
    assert report.violations == repeats, report.summary()
    assert report.coverage == 1.0, report.summary()

    exported = CliRunner().invoke(cli_main, ["export", "--state", str(state)])
    assert exported.exit_code == 0, exported.output
    catalogue = [json.loads(line) for line in exported.stdout.splitlines()]
    fetched = [entry for entry in catalogue if entry["status"] is not None]
    assert len(fetched) >= report.expected_pages
    responses = warc_responses(sorted(state.glob("**/warc")))
    for entry in fetched:
        where = (entry["warc_file"], entry["warc_offset"])
        assert responses.get(where) == entry["url"], entry
