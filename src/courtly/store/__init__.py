"""Frontier stores: the seam, the in-memory reference, and the SQLite backend."""

from __future__ import annotations

from courtly.store.base import FrontierStore, LeaseBatch
from courtly.store.memory import MemoryStore
from courtly.store.sqlite import SqliteStore

__all__ = ["FrontierStore", "LeaseBatch", "MemoryStore", "SqliteStore"]
