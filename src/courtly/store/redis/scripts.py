"""The Lua scripts of the Redis store, read from the ``.lua`` files beside this module.

Every shard script is the shard prelude (``shard.lua``: key layout, counters, the
Bloom filter, the state machine's helpers) followed by the operation's own text,
so each one runs as one atomic call on one shard's slot. ``index.lua``,
``members.lua`` and ``meta.lua`` run on the crawl's own slot; ``ip_gate.lua`` on an
address's key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import cache
from importlib.resources import files
from typing import Any, Final

__all__ = ["CRAWL_SCRIPTS", "SHARD_SCRIPTS", "run_script", "script_text"]

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
CRAWL_SCRIPTS: Final = ("index", "ip_gate", "members", "meta")


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


async def run_script(
    client: Any,
    script: Any,
    name: str,
    keys: list[str],
    args: list[Any],
    send: Callable[..., Awaitable[Any]] | None = None,
) -> Any:
    """Run ``script`` (the client's registered script ``name``) on ``keys``/``args``:
    through ``send`` (the store's batcher, one pipeline per round) as ``EVALSHA`` when
    given and the script has a digest, else by the script object itself. A node that
    lacks the script (a master added while the client ran, reached by an ASK
    redirection) gets its full text once (``EVAL`` caches it there)."""
    from redis.exceptions import NoScriptError

    try:
        sha = getattr(script, "sha", None)  # a wrapped client's script may have none
        if send is None or sha is None:
            return await script(keys=keys, args=args)
        return await send("EVALSHA", sha, len(keys), *keys, *args)
    except NoScriptError:
        return await client.eval(script_text(name), len(keys), *keys, *args)
