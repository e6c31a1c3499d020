from __future__ import annotations

import pytest

from courtly.clock import FakeClock
from courtly.errors import FetchError
from courtly.fetch import Fetcher, FetchResult, MemoryFetcher
from courtly.fetch.memory import Reply


def _handler(url: str) -> Reply:
    if url.endswith("/full"):
        return (200, {"Content-Type": "text/html"}, b"<p>hi</p>")
    if url.endswith("/pairs"):
        return (301, [("Location", "/full"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")], b"")
    if url.endswith("/short"):
        return (404, b"gone")
    if url.endswith("/status"):
        return 204
    if url.endswith("/down"):
        raise FetchError("connect", "refused")
    return FetchResult(url=url, status=418, headers=(), body=b"tea", started_at=1.0, ended_at=2.0)


async def test_short_forms_are_completed() -> None:
    clock = FakeClock(start_at=100.0)
    fetcher: Fetcher = MemoryFetcher(_handler, clock, elapsed_s=0.5)
    result = await fetcher.fetch("http://a.example/full")
    assert result.status == 200
    assert result.header("content-type") == "text/html"
    assert result.body == result.raw_body == b"<p>hi</p>"
    assert (result.started_at, result.ended_at, result.elapsed_s) == (100.0, 100.5, 0.5)

    moved = await fetcher.fetch("http://a.example/pairs")
    assert moved.headers == (("Location", "/full"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"))
    assert (await fetcher.fetch("http://a.example/short")).body == b"gone"
    assert (await fetcher.fetch("http://a.example/status")).status == 204


async def test_whole_results_pass_through_and_errors_propagate() -> None:
    async with MemoryFetcher(_handler) as fetcher:
        result = await fetcher.fetch("http://a.example/teapot")
        assert (result.status, result.started_at) == (418, 1.0)
        with pytest.raises(FetchError) as caught:
            await fetcher.fetch("http://a.example/down")
        assert caught.value.kind == "connect"
        assert fetcher.requests == ["http://a.example/teapot", "http://a.example/down"]


async def test_async_handlers_are_awaited() -> None:
    async def handler(url: str) -> Reply:
        return (200, {}, url.encode())

    fetcher = MemoryFetcher(handler)
    assert (await fetcher.fetch("http://b.example/x")).body == b"http://b.example/x"


async def test_resolve_answers_from_the_table() -> None:
    fetcher = MemoryFetcher(_handler, addresses={"A.example": "192.0.2.1"})
    assert await fetcher.resolve("a.example.") == "192.0.2.1"
    with pytest.raises(FetchError) as caught:
        await fetcher.resolve("b.example")
    assert caught.value.kind == "dns"
