"""Every FrontierStore backend, for the contract suite and the property tests.

Add a backend here and both suites run against it. A factory takes a fresh
directory (for backends that persist) and returns a new, empty store.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from courtly.frontier.config import QueueConfig
from courtly.store.base import FrontierStore
from courtly.store.memory import MemoryStore
from courtly.store.sqlite import SqliteStore

StoreFactory = Callable[[Path, QueueConfig, random.Random], FrontierStore]


def _memory(_dir: Path, queues: QueueConfig, rng: random.Random) -> FrontierStore:
    return MemoryStore(queues, rng=rng)


def _sqlite(directory: Path, queues: QueueConfig, rng: random.Random) -> FrontierStore:
    return SqliteStore(directory / "frontier.db", queues, rng=rng)


STORE_FACTORIES: dict[str, StoreFactory] = {"memory": _memory, "sqlite": _sqlite}
