from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence

import pytest

from courtly.clock import FakeClock
from courtly.errors import FetchError
from courtly.fetch import DnsCache


class ScriptedResolver:
    """Answers from a table, counting calls; a gate can hold answers back."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.calls: list[str] = []
        self.gate: asyncio.Event | None = None

    async def __call__(self, host: str) -> Sequence[str]:
        self.calls.append(host)
        if self.gate is not None:
            await self.gate.wait()
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.table[host]


async def test_answers_are_cached_until_the_ttl_expires() -> None:
    clock = FakeClock()
    resolver = ScriptedResolver({"a.example": ["192.0.2.1", "192.0.2.1", "2001:db8::1"]})
    cache = DnsCache(clock, ttl_s=300, resolver_fn=resolver)

    first = await cache.resolve("a.example")
    assert first == ("192.0.2.1", "2001:db8::1")  # deduplicated, order kept
    clock.advance(299)
    assert await cache.resolve("A.Example.") is first  # normalised name, same tuple
    assert resolver.calls == ["a.example"]

    resolver.table["a.example"] = ["192.0.2.2"]
    clock.advance(1)
    assert await cache.resolve("a.example") == ("192.0.2.2",)
    assert resolver.calls == ["a.example", "a.example"]


async def test_failures_are_cached_for_the_shorter_negative_ttl() -> None:
    clock = FakeClock()
    resolver = ScriptedResolver({})
    cache = DnsCache(clock, ttl_s=300, resolver_fn=resolver, negative_ttl_s=30)

    for _ in range(2):
        with pytest.raises(FetchError) as caught:
            await cache.resolve("missing.example")
        assert caught.value.kind == "dns"
    assert len(resolver.calls) == 1

    resolver.table["missing.example"] = ["192.0.2.7"]
    clock.advance(29)
    with pytest.raises(FetchError):
        await cache.resolve("missing.example")
    clock.advance(1)
    assert await cache.resolve("missing.example") == ("192.0.2.7",)
    assert len(resolver.calls) == 2


async def test_empty_answer_is_a_dns_error() -> None:
    cache = DnsCache(FakeClock(), resolver_fn=ScriptedResolver({"e.example": []}))
    with pytest.raises(FetchError) as caught:
        await cache.resolve("e.example")
    assert caught.value.kind == "dns"


async def test_concurrent_lookups_of_one_name_share_one_call() -> None:
    resolver = ScriptedResolver({"a.example": ["192.0.2.1"], "b.example": ["192.0.2.2"]})
    resolver.gate = asyncio.Event()
    cache = DnsCache(FakeClock(), resolver_fn=resolver)

    tasks = [asyncio.create_task(cache.resolve(name)) for name in ["a.example"] * 5 + ["b.example"]]
    await asyncio.sleep(0)
    resolver.gate.set()
    answers = await asyncio.gather(*tasks)
    assert answers == [("192.0.2.1",)] * 5 + [("192.0.2.2",)]
    assert sorted(resolver.calls) == ["a.example", "b.example"]


async def test_cancelling_one_waiter_does_not_cancel_the_lookup() -> None:
    resolver = ScriptedResolver({"a.example": ["192.0.2.1"]})
    resolver.gate = asyncio.Event()
    cache = DnsCache(FakeClock(), resolver_fn=resolver)

    impatient = asyncio.create_task(cache.resolve("a.example"))
    patient = asyncio.create_task(cache.resolve("a.example"))
    await asyncio.sleep(0)
    impatient.cancel()
    resolver.gate.set()
    assert await patient == ("192.0.2.1",)
    assert impatient.cancelled()
    assert resolver.calls == ["a.example"]


async def test_overrides_answer_without_resolving_and_never_expire() -> None:
    clock = FakeClock()
    resolver = ScriptedResolver({})
    cache = DnsCache(clock, resolver_fn=resolver, overrides={"Pinned.Example.": ["127.0.0.2"]})
    assert await cache.resolve("pinned.example") == ("127.0.0.2",)
    clock.advance(10**6)
    assert await cache.resolve("PINNED.example") == ("127.0.0.2",)
    assert cache.cached("pinned.example") == ("127.0.0.2",)
    assert resolver.calls == []


async def test_slow_resolver_times_out_as_dns_error() -> None:
    resolver = ScriptedResolver({"slow.example": ["192.0.2.1"]})
    resolver.gate = asyncio.Event()  # never set
    cache = DnsCache(FakeClock(), resolver_fn=resolver, timeout_s=0.01)
    with pytest.raises(FetchError) as caught:
        await cache.resolve("slow.example")
    assert caught.value.kind == "dns"
    assert "no DNS answer" in str(caught.value)


async def test_cached_peeks_without_resolving() -> None:
    clock = FakeClock()
    resolver = ScriptedResolver({"a.example": ["192.0.2.1"]})
    cache = DnsCache(clock, ttl_s=10, resolver_fn=resolver)
    assert cache.cached("a.example") is None
    await cache.resolve("a.example")
    assert cache.cached("a.example") == ("192.0.2.1",)
    clock.advance(10)
    assert cache.cached("a.example") is None
    assert resolver.calls == ["a.example"]


async def test_expired_entries_are_swept_as_the_cache_grows() -> None:
    clock = FakeClock()
    table = {f"h{i}.example": ["192.0.2.1"] for i in range(3000)}
    cache = DnsCache(clock, ttl_s=1, resolver_fn=ScriptedResolver(table))
    for i in range(1500):
        await cache.resolve(f"h{i}.example")
    clock.advance(2)
    for i in range(1500, 3000):
        await cache.resolve(f"h{i}.example")
    assert len(cache) < 3000


async def test_aclose_cancels_lookups_in_flight() -> None:
    resolver = ScriptedResolver({"a.example": ["192.0.2.1"]})
    resolver.gate = asyncio.Event()
    cache = DnsCache(FakeClock(), resolver_fn=resolver)
    waiter = asyncio.create_task(cache.resolve("a.example"))
    await asyncio.sleep(0)
    await cache.aclose()
    with pytest.raises(asyncio.CancelledError):
        await waiter


async def test_system_resolver_handles_literals() -> None:
    from courtly.fetch import getaddrinfo_addresses

    assert await getaddrinfo_addresses("127.0.0.1") == ["127.0.0.1"]
    assert await getaddrinfo_addresses("::1") == ["::1"]
