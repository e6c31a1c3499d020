"""SIGKILL a process driving a SqliteStore at random moments; reopen after each kill.

Checked every time: the file passes ``integrity_check``; every URL whose
addition was made durable (``flush``) and whose completion was not is still
queued, or its completion was committed after the last flush (it is in the
catalogue); no URL both completed and queued; no URL queued twice; every
durable URL is known to the seen-set; fencing tokens keep increasing.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from courtly.frontier.budget import BudgetConfig
from courtly.frontier.records import AddStatus, QueuedUrl
from courtly.store.sqlite import SqliteStore
from tests.unit.store.crash_worker import QUEUES

WORKER = Path(__file__).with_name("crash_worker.py")
KILLS = 12


def _run_and_kill(state: Path, log: Path, run: int, rng: random.Random) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    with subprocess.Popen(
        [sys.executable, str(WORKER), str(state), str(log), str(run)],
        stdout=subprocess.PIPE,
        env=env,
    ) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == b"ready", "the worker did not start"
            time.sleep(rng.uniform(0.05, 0.4))
            assert child.poll() is None, "the worker died on its own"
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
    assert child.returncode == -signal.SIGKILL


def _read_log(log: Path) -> tuple[set[str], set[str], list[int]]:
    added: set[str] = set()
    completed: set[str] = set()
    tokens: list[int] = []
    if log.exists():
        for line in log.read_text().splitlines():
            kind, _, value = line.partition(" ")
            if kind == "A":
                added.add(value)
            elif kind == "C":
                completed.add(value)
            elif kind == "T":
                tokens.append(int(value))
    return added, completed, tokens


def _check_file(state: Path, added: set[str], completed: set[str]) -> int:
    conn = sqlite3.connect(state)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        rows = conn.execute("SELECT url FROM front UNION ALL SELECT url FROM back")
        queued = [u for (u,) in rows]
        # Fetched pages only: newly discovered URLs are catalogued too (with no status).
        fetched = "SELECT url FROM catalogue WHERE status IS NOT NULL"
        catalogued = {u for (u,) in conn.execute(fetched)}
    finally:
        conn.close()
    queued_set = set(queued)
    assert len(queued) == len(queued_set), "a URL is queued twice"
    assert not queued_set & catalogued, "a completed URL is queued again"
    assert not completed & queued_set, "a durably completed URL is queued again"
    assert completed <= catalogued
    lost = added - completed - queued_set - catalogued
    assert not lost, f"durable URLs lost: {sorted(lost)[:5]}"
    return len(queued_set)


async def _check_store(state: Path, added: set[str], tokens: list[int]) -> None:
    store = SqliteStore(state, QUEUES)
    entries = [QueuedUrl(u, u.split("/")[2], 0) for u in sorted(added)]
    statuses = await store.add(entries, time.time(), BudgetConfig(max_queued_per_host=None))
    assert AddStatus.QUEUED not in statuses, "the seen-set forgot a durable URL"
    batch = await store.lease(time.time() + 10**6, 60.0, 1)
    if tokens and batch.leases:
        assert batch.leases[0].token > max(tokens), "a fencing token went backwards"
    store._cancel_timer()
    store._db.close()  # leave the file as a crash would: no checkpoint, no commit


@pytest.mark.slow
async def test_sigkill_at_random_moments_loses_nothing(tmp_path: Path) -> None:
    state = tmp_path / "frontier.db"
    log = tmp_path / "durable.log"
    rng = random.Random(20240601)
    checked_queued = 0
    for run in range(KILLS):
        _run_and_kill(state, log, run, rng)
        added, completed, tokens = _read_log(log)
        checked_queued += _check_file(state, added, completed)
        await _check_store(state, added, tokens)
    added, completed, _ = _read_log(log)
    assert completed and checked_queued, "the worker made too little progress to test anything"
