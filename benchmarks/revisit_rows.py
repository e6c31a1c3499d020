"""The recrawl rows of the SQLite store against the revisit blob they replace.

N URLs with a full recrawl state each (SQLite state file, ``synchronous=normal``):

* ``note_ms``: one visit noted and its (empty) completion step, the cost a fetch adds;
* ``due_ms``: one ``requeue_due`` of 256 due rows among N (the due index), queued;
* ``blob_ms`` / ``blob_mb``: what the former design paid every 5 s, serialising every
  state into one JSON blob (the blob of ``courtly.store.revisit_blob``'s format).

    python benchmarks/revisit_rows.py [--urls 100000] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import tempfile
import time
from pathlib import Path

from courtly.fetch.validators import Validators
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.revisit import RevisitState
from courtly.store.revisit_rows import RevisitRow
from courtly.store.sqlite import SqliteStore

NOW = 1_800_000_000.0


def state(i: int) -> RevisitState:
    return RevisitState(
        f"http://h{i % 1000}.test/page/{i}",
        visits=12,
        comparisons=11,
        changes=3,
        unchanged_s=86_400.0,
        changed_ring=(3_600.0, 7_200.0, 14_400.0),
        validators=Validators(f'"{i}"', "Tue, 01 Dec 2026 10:00:00 GMT"),
        status=200,
        body_digest="sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
        text_digest=i * 7919,
        simhash=i * 104729,
        content_bytes=20_000,
        last_fetch_at=NOW - 3_600,
        interval_s=86_400.0,
        next_due_at=NOW + 1 + (i % 100_000),
    )


async def measure(urls: int, directory: Path) -> dict[str, object]:
    store = SqliteStore(directory / "frontier.sqlite3", QueueConfig(), synchronous="normal")
    rows = [RevisitRow(state(i), f"h{i % 1000}.test", 1) for i in range(urls)]
    started = time.perf_counter()
    for start in range(0, urls, 5_000):
        await store.note_visits(rows[start : start + 5_000])
        await store.flush()
    load_s = time.perf_counter() - started
    notes: list[float] = []
    for i in range(200):
        row = rows[(i * 7_919) % urls]
        moved = dataclasses.replace(row.state, next_due_at=NOW + 500_000)
        t = time.perf_counter()
        await store.note_visits([dataclasses.replace(row, state=moved)])
        await store.record([])
        notes.append(time.perf_counter() - t)
    dues: list[float] = []
    for k in range(5):
        t = time.perf_counter()
        batch = await store.requeue_due(
            NOW + 1 + 256 * (k + 1),
            256,
            BudgetConfig(max_queued_per_host=None),
            levels=(0, 1),
            retry_s=60.0,
            lost_after_s=86_400.0,
        )
        dues.append(time.perf_counter() - t)
        assert len(batch.queued) > 0
    await store.aclose()
    t = time.perf_counter()
    blob = json.dumps({"format": 1, "states": [dataclasses.asdict(r.state) for r in rows]}).encode()
    blob_s = time.perf_counter() - t
    return {
        "urls": urls,
        "load_s": round(load_s, 2),
        "note_ms_median": round(statistics.median(notes) * 1000, 3),
        "due_256_ms_median": round(statistics.median(dues) * 1000, 2),
        "blob_ms": round(blob_s * 1000, 1),
        "blob_mb": round(len(blob) / 1e6, 1),
        "state_file_mb": round((directory / "frontier.sqlite3").stat().st_size / 1e6, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="revisit-rows-") as tmp:
        result = asyncio.run(measure(args.urls, Path(tmp)))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
