"""A DNS cache with a TTL, negative caching and coalesced lookups.

The cache stores *every* address of a name, in resolver order; choosing one and
judging it (the address guard) is the fetcher's business. Expiry is measured on
the injected :class:`~courtly.clock.Clock`, so tests drive it with ``FakeClock``.
"""

from __future__ import annotations

import asyncio
import functools
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence

from courtly.clock import Clock
from courtly.errors import FetchError
from courtly.fetch.hosts import normalise_host_name

__all__ = ["DnsCache", "ResolverFn", "getaddrinfo_addresses"]

ResolverFn = Callable[[str], Awaitable[Sequence[str]]]
"""Resolve one host name to its addresses; raise ``OSError`` when it does not resolve."""

_SWEEP_MIN_ENTRIES = 1024


async def getaddrinfo_addresses(host: str) -> list[str]:
    """Every address of ``host`` from the running loop's ``getaddrinfo``, deduplicated, in order."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    seen: dict[str, None] = {}
    for _family, _type, _proto, _canonname, sockaddr in infos:
        seen[str(sockaddr[0])] = None
    return list(seen)


class DnsCache:
    """Resolve host names through ``resolver_fn``, caching answers for ``ttl_s`` seconds.

    - Names are normalised (lower case, no trailing dot) before lookup.
    - ``overrides`` (e.g. from a hosts file) answer for the names they list, for ever,
      without calling the resolver.
    - A failure (``OSError`` from the resolver, an empty answer, or no answer within
      ``timeout_s``) raises ``FetchError("dns")`` and is cached for ``negative_ttl_s``.
    - Concurrent lookups of one name share a single resolver call; cancelling one
      caller does not cancel the lookup for the others.

    The answer is a tuple of address strings; the same tuple object is returned for
    as long as the entry lives, so callers may memoise work on it by identity.
    """

    def __init__(
        self,
        clock: Clock,
        ttl_s: float = 300.0,
        resolver_fn: ResolverFn = getaddrinfo_addresses,
        overrides: Mapping[str, Sequence[str]] | None = None,
        *,
        negative_ttl_s: float = 30.0,
        timeout_s: float | None = 10.0,
    ) -> None:
        self._clock = clock
        self._ttl_s = ttl_s
        self._negative_ttl_s = negative_ttl_s
        self._timeout_s = timeout_s
        self._resolver_fn = resolver_fn
        self._overrides: dict[str, tuple[str, ...]] = {
            normalise_host_name(name): tuple(addresses)
            for name, addresses in (overrides or {}).items()
            if addresses
        }
        # name -> (expires_at, answer or the error to re-raise)
        self._entries: dict[str, tuple[float, tuple[str, ...] | FetchError]] = {}
        self._inflight: dict[str, asyncio.Task[tuple[str, ...] | FetchError]] = {}
        self._sweep_at_size = _SWEEP_MIN_ENTRIES

    def __len__(self) -> int:
        """Number of cached entries (live or expired but not yet swept)."""
        return len(self._entries)

    async def resolve(self, host: str) -> tuple[str, ...]:
        """The addresses of ``host`` (never empty), or ``FetchError("dns")``."""
        name = normalise_host_name(host)
        fixed = self._overrides.get(name)
        if fixed is not None:
            return fixed
        entry = self._entries.get(name)
        if entry is not None and entry[0] > self._clock.now():
            answer = entry[1]
        else:
            task = self._inflight.get(name)
            if task is None:
                task = asyncio.get_running_loop().create_task(self._lookup(name))
                self._inflight[name] = task
                task.add_done_callback(functools.partial(self._lookup_done, name))
            answer = await asyncio.shield(task)
        if isinstance(answer, FetchError):
            raise FetchError("dns", str(answer))
        return answer

    def cached(self, host: str) -> tuple[str, ...] | None:
        """The live cached (or overridden) answer for ``host``, without resolving; else ``None``."""
        name = normalise_host_name(host)
        fixed = self._overrides.get(name)
        if fixed is not None:
            return fixed
        entry = self._entries.get(name)
        if entry is None or entry[0] <= self._clock.now() or isinstance(entry[1], FetchError):
            return None
        return entry[1]

    async def aclose(self) -> None:
        """Cancel lookups still in flight."""
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._inflight.clear()

    async def _lookup(self, name: str) -> tuple[str, ...] | FetchError:
        answer: tuple[str, ...] | FetchError
        try:
            async with asyncio.timeout(self._timeout_s):
                addresses = await self._resolver_fn(name)
        except TimeoutError:
            answer = FetchError("dns", f"{name}: no DNS answer within {self._timeout_s} s")
        except OSError as exc:
            answer = FetchError("dns", f"{name}: {exc.strerror or exc}")
        else:
            deduped = tuple(dict.fromkeys(addresses))
            answer = deduped if deduped else FetchError("dns", f"{name}: no addresses")
        ttl_s = self._negative_ttl_s if isinstance(answer, FetchError) else self._ttl_s
        self._store(name, self._clock.now() + ttl_s, answer)
        return answer

    def _lookup_done(self, name: str, task: asyncio.Task[tuple[str, ...] | FetchError]) -> None:
        if self._inflight.get(name) is task:
            del self._inflight[name]
        if not task.cancelled():
            task.exception()  # retrieved, so an orphaned failure is never logged

    def _store(self, name: str, expires_at: float, answer: tuple[str, ...] | FetchError) -> None:
        self._entries[name] = (expires_at, answer)
        if len(self._entries) >= self._sweep_at_size:
            now = self._clock.now()
            self._entries = {k: v for k, v in self._entries.items() if v[0] > now}
            self._sweep_at_size = max(_SWEEP_MIN_ENTRIES, 2 * len(self._entries))
