"""The reading commands on a state directory that cannot be written (a read-only mount,
another user's crawl): ``status``, ``export`` and ``changes`` read it as they read a
writable one, and write nothing; a state whose crawl did not end cleanly (its journal
cannot be replayed there) is refused with a message that says to copy it.

Each command runs in a private mount namespace (``unshare --mount``) in which the state
directory is bind-mounted read-only, so nothing outlives the command; root only (the
tests are skipped elsewhere).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from courtly.archive.catalogue import CatalogueEntry
from courtly.cli import run_async
from courtly.exit_codes import ExitCode
from courtly.frontier.config import QueueConfig
from courtly.store.sqlite import SqliteStore

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a read-only bind mount in a private mount namespace needs root and unshare",
)

SEED = "http://www.example.test/"


def _read_only(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m courtly ARGS`` with ``state`` mounted read-only for it alone."""
    command = shlex.join([sys.executable, "-m", "courtly", *args])
    where = shlex.quote(str(state))
    script = f"mount --bind {where} {where} && mount -o remount,bind,ro {where} && {command}"
    return subprocess.run(
        ["unshare", "--mount", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _writable(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "courtly", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _digest(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def _stopped_crawl(state: Path) -> None:
    state.mkdir()

    async def make() -> None:
        store = SqliteStore(state / "frontier.sqlite3", QueueConfig())
        await store.record([CatalogueEntry(f"{SEED}{i}", status=200) for i in range(500)])
        await store.put_blob("crawl", "config", json.dumps({"seeds": [SEED]}).encode())
        await store.aclose()

    run_async(make())


def test_status_export_and_changes_read_a_read_only_state(tmp_path: Path) -> None:
    state = tmp_path / "S"
    _stopped_crawl(state)
    before = _digest(state)
    exported = _read_only(state, "export", "--state", str(state), "--format", "jsonl")
    assert exported.returncode == 0, exported.stderr
    urls = sorted(json.loads(line)["url"] for line in exported.stdout.splitlines())
    assert urls == sorted(f"{SEED}{i}" for i in range(500))
    status = _read_only(state, "status", "--state", str(state), "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["config"]["seeds"] == [SEED]
    changes = _read_only(state, "changes", "--state", str(state))
    assert changes.returncode == 0, changes.stderr
    assert _digest(state) == before  # nothing written, nothing left beside the file
    # the same export as from the writable directory
    assert _writable("export", "--state", str(state), "--format", "jsonl").stdout == (
        exported.stdout
    )


def test_a_read_only_state_whose_crawl_did_not_end_cleanly_is_refused_clearly(
    tmp_path: Path,
) -> None:
    state = tmp_path / "S"
    state.mkdir()
    # a crawl killed after its last commit: its journal (-wal) is left beside the file
    killed = textwrap.dedent(
        f"""
        import asyncio, os
        from courtly.archive.catalogue import CatalogueEntry
        from courtly.frontier.config import QueueConfig
        from courtly.store.sqlite import SqliteStore

        async def main():
            store = SqliteStore({str(state / "frontier.sqlite3")!r}, QueueConfig(),
                                commit_interval_s=0.0)
            await store.record([CatalogueEntry("{SEED}", status=200)])
            os._exit(0)

        asyncio.run(main())
        """
    )
    subprocess.run([sys.executable, "-c", killed], check=True, timeout=60)
    assert (state / "frontier.sqlite3-wal").stat().st_size > 0
    before = _digest(state)
    status = _read_only(state, "status", "--state", str(state))
    assert status.returncode == ExitCode.REFUSED
    assert "did not end cleanly" in status.stderr
    assert "copy the state directory" in status.stderr
    assert "Traceback" not in status.stderr
    assert _digest(state) == before
    # where it can be written, the same state is read as usual (the journal replayed)
    assert _writable("status", "--state", str(state)).returncode == 0
