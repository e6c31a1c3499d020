"""The Lua scripts of the Redis store, read from the ``.lua`` files beside this module.

Every shard script is the shard prelude (``shard.lua``: key layout, counters, the
Bloom filter, the state machine's helpers) followed by the operation's own text,
so each one runs as one atomic call on one shard's slot. ``index.lua`` and
``meta.lua`` run on the crawl's own slot; ``ip_gate.lua`` on an address's key.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Final

__all__ = ["CRAWL_SCRIPTS", "SHARD_SCRIPTS", "script_text"]

SHARD_SCRIPTS: Final = (
    "add",
    "complete",
    "counts",
    "due",
    "fence",
    "host",
    "lease",
    "note",
    "promote",
    "record",
    "release",
    "revisit",
)
CRAWL_SCRIPTS: Final = ("index", "ip_gate", "meta")


def _read(name: str) -> str:
    return files("courtly.store.redis").joinpath("lua", f"{name}.lua").read_text("utf-8")


@cache
def script_text(name: str) -> str:
    """The full text of script ``name`` (the prelude included for a shard script)."""
    if name in SHARD_SCRIPTS:
        return _read("shard") + "\n" + _read(name)
    if name in CRAWL_SCRIPTS:
        return _read(name)
    raise KeyError(name)
