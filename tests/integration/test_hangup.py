"""A crawl whose terminal goes away: an ssh session that ends (SIGHUP, then EIO on every
write to the terminal), or a reader of its output that exits (``courtly crawl 2>&1 |
head``). The crawl stops as on SIGTERM (requests in flight finish, exit code 4), or runs
on under ``nohup``; either way it ends with its own exit code, its ``--summary-json``
written and its state whole, and nothing fails for want of a terminal.

The crawl runs in a pseudo-terminal (``pty.fork``) as in an ssh session; closing the
terminal's master side hangs it up, and the kernel sends SIGHUP to the crawl's process
group, its partitions included.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from courtly.cli import main as cli_main
from courtly.exit_codes import ExitCode
from courtly.sandbox import SandboxSpec

if TYPE_CHECKING:
    from tests.integration.conftest import LiveWeb, crawl_command
else:  # tests/integration is no package: pytest imports its conftest as "conftest"
    from conftest import LiveWeb, crawl_command

pytestmark = pytest.mark.integration

GUARD_S = 120.0
"""How long a crawl may take to stop or end before the test calls it hung (a guard
against a hang, not a speed bound)."""

SPEC = replace(SandboxSpec.small(), trap_hosts=0)


def _in_a_terminal(command: list[str], web: LiveWeb, *, nohup: bool) -> tuple[int, bytes]:
    """Run ``command`` on a pseudo-terminal (SIGHUP ignored, as ``nohup`` does, with
    ``nohup``), hang the terminal up once the web has served 10 requests and the crawl
    has drawn its progress, and return the command's exit code and what it drew."""
    pid, master = pty.fork()
    if pid == 0:  # the child: the crawl, the terminal its controlling one
        try:
            if nohup:
                signal.signal(signal.SIGHUP, signal.SIG_IGN)
            os.execv(command[0], command)
        finally:
            os._exit(127)
    drawn = b""
    deadline = time.monotonic() + GUARD_S
    try:
        while web.server.requests_logged < 10 or b"pages" not in drawn:
            assert time.monotonic() < deadline, drawn[-2000:]
            if select.select([master], [], [], 0.05)[0]:
                drawn += os.read(master, 65536)
    finally:
        os.close(master)  # the hangup
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), drawn
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the crawl did not end after its terminal hung up")
        time.sleep(0.05)


def _status(state: Path) -> dict[str, object]:
    result = CliRunner().invoke(cli_main, ["status", "--state", str(state), "--json"])
    assert result.exit_code == 0, result.output
    status: dict[str, object] = json.loads(result.output)
    return status


def test_a_hangup_stops_the_crawl_as_sigterm_does_and_keeps_its_summary(
    tmp_path: Path, serve_web: Callable[[SandboxSpec], LiveWeb]
) -> None:
    web = serve_web(SPEC)
    state, summary = tmp_path / "state", tmp_path / "summary.json"
    command = crawl_command(web, state, "--processes", "2", "--summary-json", str(summary))
    code, drawn = _in_a_terminal(command, web, nohup=False)
    assert code == ExitCode.SIGNAL, drawn[-2000:]
    data = json.loads(summary.read_text(encoding="utf-8"))
    assert (data["exit_code"], data["stop_reason"]) == (ExitCode.SIGNAL, "signal")
    status = _status(state)
    last_run = status["last_run"]
    assert isinstance(last_run, dict) and last_run["stop_reason"] == "signal"
    frontier = status["frontier"]
    assert isinstance(frontier, dict)
    assert frontier["leased"] == 0  # every partition finished its requests in flight


def test_under_nohup_a_hangup_leaves_the_crawl_running_to_its_end(
    tmp_path: Path, serve_web: Callable[[SandboxSpec], LiveWeb]
) -> None:
    web = serve_web(SPEC)
    state, summary = tmp_path / "state", tmp_path / "summary.json"
    command = crawl_command(
        web, state, "--processes", "2", "--max-time", "6", "--summary-json", str(summary)
    )
    code, drawn = _in_a_terminal(command, web, nohup=True)
    assert code == ExitCode.LIMIT, drawn[-2000:]
    data = json.loads(summary.read_text(encoding="utf-8"))
    assert (data["exit_code"], data["stop_reason"]) == (ExitCode.LIMIT, "max_time")


def test_a_reader_gone_from_the_output_leaves_the_crawl_its_exit_code_and_summary(
    tmp_path: Path, serve_web: Callable[[SandboxSpec], LiveWeb]
) -> None:
    """``courtly crawl ... 2>&1 | head -1``: before, the crawl ended with exit 1 and no
    ``--summary-json`` (its last progress line raised BrokenPipeError)."""
    web = serve_web(SPEC)
    state, summary = tmp_path / "state", tmp_path / "summary.json"
    command = crawl_command(
        web, state, "--max-time", "4", "--progress-interval", "0.2", "--summary-json",
        str(summary),
    )  # fmt: skip
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as crawl:
        assert crawl.stdout is not None
        assert crawl.stdout.readline()  # the first line, then the reader goes away
        crawl.stdout.close()
        code = crawl.wait(timeout=GUARD_S)
    assert code == ExitCode.LIMIT
    data = json.loads(summary.read_text(encoding="utf-8"))
    assert (data["exit_code"], data["stop_reason"]) == (ExitCode.LIMIT, "max_time")
