"""fetch_robots against real HTTP on loopback: statuses, redirects, size, timeouts, refusals.

The fetcher here is a deliberately tiny aiohttp implementation of the
``Fetcher`` protocol (one GET, no redirects, a total timeout, a capped body),
so these tests exercise the robots policy over real sockets without
depending on the crawler's production HTTP client.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from courtly.clock import FakeClock
from courtly.errors import FetchError
from courtly.fetch.records import FetchResult
from courtly.robots import (
    PARSE_LIMIT_BYTES,
    RobotsCache,
    authority_of,
    fetch_robots,
    robots_url_for,
)

pytestmark = pytest.mark.integration

UA = "courtly/0.1 (+https://example.org/bot)"
RULES = b"User-agent: *\nDisallow: /private\n"


class LoopbackFetcher:
    """One GET without redirects, a total timeout, and a body capped at ``max_bytes``."""

    def __init__(self, session: aiohttp.ClientSession, *, timeout_s: float, max_bytes: int) -> None:
        self._session = session
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._max_bytes = max_bytes
        self._clock = FakeClock()

    async def fetch(self, url: str) -> FetchResult:
        started_at = self._clock.now()
        try:
            async with self._session.get(
                url, allow_redirects=False, timeout=self._timeout
            ) as response:
                body = bytearray()
                truncated = False
                try:
                    async for chunk in response.content.iter_chunked(64 * 1024):
                        room = self._max_bytes - len(body)
                        if len(chunk) > room:
                            body += chunk[:room]
                            truncated = True
                            break
                        body += chunk
                except aiohttp.ClientPayloadError:
                    truncated = True
                return FetchResult(
                    url=url,
                    status=response.status,
                    headers=tuple(response.headers.items()),
                    body=bytes(body),
                    started_at=started_at,
                    ended_at=self._clock.now(),
                    truncated=truncated,
                )
        except TimeoutError as error:
            raise FetchError("timeout", f"{url}: no answer in time") from error
        except aiohttp.ClientConnectorError as error:
            raise FetchError("connect", f"{url}: {error}") from error
        except aiohttp.ClientError as error:
            raise FetchError("protocol", f"{url}: {error}") from error


@dataclass
class Sites:
    main: TestServer
    other: TestServer
    fetcher: LoopbackFetcher
    hits: dict[str, int] = field(default_factory=dict)

    def url(self, path: str) -> str:
        return str(self.main.make_url(path))


def _main_app(hits: dict[str, int], other_base: list[str]) -> web.Application:
    async def count(request: web.Request) -> None:
        hits[request.path] = hits.get(request.path, 0) + 1

    async def ok(request: web.Request) -> web.Response:
        await count(request)
        await asyncio.sleep(0.02)
        return web.Response(body=RULES, content_type="text/plain")

    async def status(request: web.Request) -> web.Response:
        code = int(request.match_info["code"])
        headers = {"Retry-After": "120"} if code in (429, 503) else {}
        return web.Response(status=code, body=b"User-agent: *\nDisallow: /\n", headers=headers)

    async def chain(request: web.Request) -> web.Response:
        left = int(request.match_info["left"])
        if left == 0:
            return web.Response(body=b"User-agent: *\nDisallow: /deep\n")
        # relative Location, resolved against this URL
        raise web.HTTPFound(f"../{left - 1}/robots.txt")

    async def loop(request: web.Request) -> web.Response:
        target = "/loop/b.txt" if request.match_info["name"] == "a" else "/loop/a.txt"
        raise web.HTTPMovedPermanently(target)

    async def cross(request: web.Request) -> web.Response:
        raise web.HTTPMovedPermanently(other_base[0] + "/robots.txt")

    async def big(request: web.Request) -> web.Response:
        filler = b"# " + b"x" * 1021 + b"\n"
        body = (
            b"User-agent: *\nDisallow: /early\n"
            + filler * (PARSE_LIMIT_BYTES // len(filler) + 20)
            + b"Disallow: /late\n"
        )
        return web.Response(body=body)

    async def broken(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_length = 10_000
        await response.prepare(request)
        await response.write(b"User-agent: *\nDisallow: /private\n")
        assert request.transport is not None
        request.transport.close()
        return response

    async def hang(request: web.Request) -> web.Response:
        await asyncio.sleep(30)
        return web.Response(body=RULES)

    app = web.Application()
    app.router.add_get("/ok/robots.txt", ok)
    app.router.add_get("/status/{code}/robots.txt", status)
    app.router.add_get("/chain/{left}/robots.txt", chain)
    app.router.add_get("/loop/{name}.txt", loop)
    app.router.add_get("/cross/robots.txt", cross)
    app.router.add_get("/big/robots.txt", big)
    app.router.add_get("/broken/robots.txt", broken)
    app.router.add_get("/hang/robots.txt", hang)
    return app


def _other_app() -> web.Application:
    async def robots(request: web.Request) -> web.Response:
        return web.Response(body=b"User-agent: courtly\nDisallow: /from-other-host\n")

    app = web.Application()
    app.router.add_get("/robots.txt", robots)
    return app


@pytest.fixture
async def sites() -> AsyncIterator[Sites]:
    hits: dict[str, int] = {}
    other_base: list[str] = []
    other = TestServer(_other_app(), host="127.0.0.1")
    await other.start_server()
    other_base.append(str(other.make_url("")).rstrip("/"))
    main = TestServer(_main_app(hits, other_base), host="127.0.0.1")
    await main.start_server()
    async with aiohttp.ClientSession() as session:
        fetcher = LoopbackFetcher(session, timeout_s=0.5, max_bytes=PARSE_LIMIT_BYTES)
        yield Sites(main, other, fetcher, hits)
    await main.close()
    await other.close()


async def test_200_is_parsed(sites: Sites) -> None:
    outcome = await fetch_robots(sites.fetcher, sites.url("/ok/robots.txt"))
    assert outcome.kind == "ok"
    assert outcome.rules is not None
    assert not outcome.rules.allowed("/private/x", UA)
    assert outcome.rules.allowed("/public", UA)


@pytest.mark.parametrize("code", [400, 401, 403, 404, 410])
async def test_4xx_allows_everything(sites: Sites, code: int) -> None:
    outcome = await fetch_robots(sites.fetcher, sites.url(f"/status/{code}/robots.txt"))
    assert (outcome.kind, outcome.status) == ("unavailable", code)
    assert outcome.effective_rules().allowed("/anything", UA)


@pytest.mark.parametrize("code", [429, 500, 503])
async def test_429_and_5xx_disallow_everything(sites: Sites, code: int) -> None:
    outcome = await fetch_robots(sites.fetcher, sites.url(f"/status/{code}/robots.txt"))
    assert (outcome.kind, outcome.status) == ("unreachable", code)
    assert not outcome.effective_rules().allowed("/anything", UA)


async def test_five_redirects_are_followed(sites: Sites) -> None:
    outcome = await fetch_robots(sites.fetcher, sites.url("/chain/5/robots.txt"))
    assert outcome.kind == "ok"
    assert outcome.hops == 5
    assert outcome.final_url == sites.url("/chain/0/robots.txt")
    assert outcome.rules is not None and not outcome.rules.allowed("/deep", UA)


async def test_six_redirects_are_unavailable(sites: Sites) -> None:
    outcome = await fetch_robots(sites.fetcher, sites.url("/chain/6/robots.txt"))
    assert outcome.kind == "unavailable"
    assert outcome.hops == 5
    assert len(outcome.results) == 6
    assert outcome.effective_rules().allowed("/deep", UA)


async def test_redirect_loop_is_unavailable(sites: Sites) -> None:
    outcome = await fetch_robots(sites.fetcher, sites.url("/loop/a.txt"))
    assert outcome.kind == "unavailable"
    assert len(outcome.results) == 2


async def test_cross_host_redirect_is_followed(sites: Sites) -> None:
    outcome = await fetch_robots(sites.fetcher, sites.url("/cross/robots.txt"))
    assert outcome.kind == "ok"
    assert outcome.final_url.startswith(str(sites.other.make_url("")).rstrip("/"))
    assert outcome.rules is not None
    assert not outcome.rules.allowed("/from-other-host", UA)


async def test_body_over_500_kib_is_cut_and_parsed(sites: Sites) -> None:
    outcome = await fetch_robots(sites.fetcher, sites.url("/big/robots.txt"))
    assert outcome.kind == "ok"
    assert outcome.results[0].truncated
    assert outcome.rules is not None
    assert not outcome.rules.allowed("/early", UA)
    assert outcome.rules.allowed("/late", UA)


async def test_body_broken_off_is_unreachable(sites: Sites) -> None:
    outcome = await fetch_robots(sites.fetcher, sites.url("/broken/robots.txt"))
    assert outcome.kind == "unreachable"
    assert not outcome.effective_rules().allowed("/public", UA)


async def test_hanging_server_times_out_as_unreachable(sites: Sites) -> None:
    outcome = await fetch_robots(sites.fetcher, sites.url("/hang/robots.txt"))
    assert outcome.kind == "unreachable"
    assert outcome.error is not None and outcome.error.startswith("timeout")


async def test_connection_refused_is_unreachable(sites: Sites) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    outcome = await fetch_robots(sites.fetcher, f"http://127.0.0.1:{port}/robots.txt")
    assert outcome.kind == "unreachable"
    assert outcome.error is not None and outcome.error.startswith("connect")


async def test_cache_fetches_once_for_many_waiting_urls(sites: Sites) -> None:
    cache = RobotsCache()
    page_urls = [sites.url(f"/ok/page-{i}") for i in range(10)]
    robots_url = sites.url("/ok/robots.txt")
    authority = authority_of(page_urls[0])
    assert robots_url_for(page_urls[0]) == sites.url("/robots.txt")

    async with asyncio.TaskGroup() as group:
        tasks = [
            group.create_task(
                cache.get_or_fetch(authority, lambda: fetch_robots(sites.fetcher, robots_url), 0.0)
            )
            for _ in page_urls
        ]
    assert sites.hits["/ok/robots.txt"] == 1
    decisions = [task.result() for task in tasks]
    assert all(decision is decisions[0] for decision in decisions)
    assert not decisions[0].allowed(sites.url("/private/1"), UA)
