"""What a crawl has learnt about its web, kept across a resume: one blob in the store.

The walk guard's budgets (:meth:`courtly.frontier.traps.WalkGuard.state`) and the
importance estimate's per-host part (:meth:`courtly.frontier.importance.Importance.state`)
live in the crawl process. A crawl with a store saves them, as one JSON blob under
:data:`BLOB`, each time it saves its progress (every ``progress_interval_s``, and at the
end), and takes them back when it starts on a store that has them. So a resumed crawl
keeps its ``max_walking`` budget per template per host (a calendar trap costs no more
for being resumed) and its host quality; a crash loses what was learnt since the last
save. What is not kept (per-URL cash, in-links, short walk chains) is learnt again.

Not in a partitioned crawl (``--processes``): each process learns from the pages it
reads, and one blob per crawl would hold only one process's part.
"""

from __future__ import annotations

import json
from typing import Final

from courtly.frontier.importance import Importance
from courtly.frontier.traps import WalkGuard
from courtly.store.base import FrontierStore

__all__ = ["BLOB", "load_learnt", "save_learnt"]

BLOB: Final = ("crawl", "learnt")
"""``(namespace, key)`` of the blob."""

_VERSION: Final = 1


def dump(walks: WalkGuard, importance: Importance) -> bytes:
    """The blob's bytes."""
    data = {"version": _VERSION, "walks": walks.state(), "importance": importance.state()}
    return json.dumps(data, separators=(",", ":")).encode()


def load(data: bytes, walks: WalkGuard, importance: Importance) -> bool:
    """Restore from the blob's bytes; ``False`` (nothing restored) for a blob of another
    version or shape."""
    try:
        found = json.loads(data)
    except ValueError:
        return False
    if not isinstance(found, dict) or found.get("version") != _VERSION:
        return False
    walk_state, importance_state = found.get("walks"), found.get("importance")
    if not isinstance(walk_state, dict) or not isinstance(importance_state, dict):
        return False
    walks.restore(walk_state)
    importance.restore(importance_state)
    return True


async def save_learnt(store: FrontierStore, walks: WalkGuard, importance: Importance) -> None:
    """Save the blob (replacing the last one)."""
    await store.put_blob(*BLOB, dump(walks, importance))


async def load_learnt(store: FrontierStore, walks: WalkGuard, importance: Importance) -> bool:
    """Take back the saved blob, if there is one; ``True`` if something was restored."""
    data = await store.get_blob(*BLOB)
    return data is not None and load(data, walks, importance)
