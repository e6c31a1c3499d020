"""HttpFetcher against real aiohttp servers on loopback (127.0.0.1 and 127.0.0.2)."""

from __future__ import annotations

import asyncio
import gzip
import socket
import ssl
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import brotli
import pytest
import trustme
from aiohttp import web

from courtly.clock import SystemClock
from courtly.errors import BlockedAddress, FetchError
from courtly.fetch import FetchConfig, HttpFetcher, is_blocked_address
from courtly.fetch.deadline import REQUEST_NOT_AFTER

pytestmark = pytest.mark.integration

MIB = 1024 * 1024
PAGE = b"<html><body>" + b"<p>loopback page</p>\n" * 500 + b"</body></html>"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Server:
    """What a loopback server saw."""

    port: int = 0
    requests: list[web.Request] = field(default_factory=list)
    peers: list[object] = field(default_factory=list)  # client (address, port) per request
    in_flight: int = 0
    max_in_flight: int = 0


@asynccontextmanager
async def serve(
    handler: Handler,
    host: str = "127.0.0.1",
    port: int = 0,
    ssl_context: ssl.SSLContext | None = None,
) -> AsyncIterator[Server]:
    seen = Server()

    async def counting(request: web.Request) -> web.StreamResponse:
        seen.requests.append(request)
        transport = request.transport
        seen.peers.append(None if transport is None else transport.get_extra_info("peername"))
        seen.in_flight += 1
        seen.max_in_flight = max(seen.max_in_flight, seen.in_flight)
        try:
            return await handler(request)
        finally:
            seen.in_flight -= 1

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", counting)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
    await site.start()
    seen.port = runner.addresses[0][1]
    try:
        yield seen
    finally:
        await runner.cleanup()


def fetcher(**changes: object) -> HttpFetcher:
    """A fetcher allowed onto loopback, with a few names mapped to 127.0.0.x."""
    settings: dict[str, object] = {"allow_private_networks": True, "total_timeout_s": 5.0}
    settings.update(changes)
    overrides = {f"h{i}.test": ["127.0.0.2"] for i in range(6)}
    overrides["one.test"] = ["127.0.0.1"]
    return HttpFetcher(
        FetchConfig(**settings),  # type: ignore[arg-type]
        SystemClock(),
        dns_overrides=overrides,
    )


def page(body: bytes = PAGE, **headers: str) -> Handler:
    """A handler answering ``body``; ``Content_Type="x"`` sends ``Content-Type: x``."""
    sent = {name.replace("_", "-"): value for name, value in headers.items()}

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, headers=sent)

    return handler


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def _gzip_bomb(decoded_mib: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MIB)
    return b"".join([compressor.compress(zeros) for _ in range(decoded_mib)] + [compressor.flush()])


async def test_plain_fetch_sends_our_headers_and_records_the_exchange() -> None:
    async with serve(page(Content_Type="text/html")) as server, fetcher() as f:
        result = await f.fetch(f"http://one.test:{server.port}/a?b=1")
    assert result.status == 200
    assert result.body == PAGE and result.raw_body == PAGE
    assert not result.truncated and not result.decoded_too_large
    assert result.ip == "127.0.0.1"
    assert result.http_version == "1.1"
    assert result.reason == "OK"
    assert 0 <= result.elapsed_s < 5
    [request] = server.requests
    assert request.headers["User-Agent"] == FetchConfig().user_agent
    assert request.headers["Accept-Encoding"] == "gzip, deflate, br"
    assert request.path_qs == "/a?b=1"
    assert ("User-Agent", FetchConfig().user_agent) in result.request_headers
    assert dict(result.request_headers)["Host"] == f"one.test:{server.port}"


class _TickingClock(SystemClock):
    """Each ``now()`` a second after the one before: which reading a stamp came from shows."""

    def __init__(self) -> None:
        self.readings: list[float] = []

    def now(self) -> float:
        self.readings.append(1_000.0 + len(self.readings))
        return self.readings[-1]


@pytest.mark.parametrize("body", [PAGE, PAGE * 40], ids=["one-read", "many-reads"])
async def test_ended_at_is_when_the_last_bytes_arrived_not_when_they_were_read(
    body: bytes,
) -> None:
    clock = _TickingClock()
    overrides = {"one.test": ["127.0.0.1"]}
    config = FetchConfig(allow_private_networks=True, total_timeout_s=5.0)
    async with (
        serve(page(body)) as server,
        HttpFetcher(config, clock, dns_overrides=overrides) as f,
    ):
        result = await f.fetch(f"http://one.test:{server.port}/")
        assert result.body == body and not result.truncated
        # stamped by the connection as the bytes came in (a reading after the request's
        # start), not by the fetch task's own reading once it had read the body (the last)
        assert result.ended_at in clock.readings
        assert result.started_at < result.ended_at < clock.readings[-1]
        before = len(clock.readings)
        again = await f.fetch(f"http://one.test:{server.port}/again")  # a reused connection
        assert again.started_at == clock.readings[before]
        assert again.started_at < again.ended_at < clock.readings[-1]


async def test_custom_user_agent_is_sent_on_every_request() -> None:
    agent = "courtly-test/1.0 (+mailto:crawl@example.org)"
    async with serve(page(), host="127.0.0.2") as server, fetcher(user_agent=agent) as f:
        for i in range(3):
            await f.fetch(f"http://h{i}.test:{server.port}/")
    assert [r.headers["User-Agent"] for r in server.requests] == [agent] * 3


async def test_redirects_are_returned_not_followed() -> None:
    async def redirect(request: web.Request) -> web.StreamResponse:
        if request.path == "/from":
            raise web.HTTPFound("/to")
        return web.Response(body=b"target")

    async with serve(redirect) as server, fetcher() as f:
        result = await f.fetch(f"http://one.test:{server.port}/from")
    assert result.status == 302
    assert result.header("location") == "/to"
    assert [r.path for r in server.requests] == ["/from"]


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_body_cap_truncates_and_the_next_fetch_still_works(chunked: bool) -> None:
    big = bytes(range(256)) * (MIB // 256)

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.path == "/small":
            return web.Response(body=b"small")
        if not chunked:
            return web.Response(body=big)
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, len(big), 64 * 1024):
            await response.write(big[start : start + 64 * 1024])
        await response.write_eof()
        return response

    cap = 100_000
    async with serve(handler) as server, fetcher(max_body_bytes=cap) as f:
        result = await f.fetch(f"http://one.test:{server.port}/big")
        again = await f.fetch(f"http://one.test:{server.port}/small")
    assert result.truncated
    assert result.raw_body == big[:cap] and result.body == big[:cap]
    assert again.body == b"small" and not again.truncated


async def test_a_body_of_exactly_the_cap_is_not_truncated() -> None:
    async with serve(page()) as server, fetcher(max_body_bytes=len(PAGE)) as f:
        result = await f.fetch(f"http://one.test:{server.port}/")
    assert result.body == PAGE
    assert not result.truncated


@pytest.mark.parametrize(
    ("coding", "wire"),
    [
        ("gzip", gzip.compress(PAGE)),
        ("deflate", zlib.compress(PAGE)),
        ("deflate", _raw_deflate(PAGE)),
        ("br", brotli.compress(PAGE)),
    ],
    ids=["gzip", "deflate-zlib", "deflate-raw", "br"],
)
async def test_content_codings_are_decoded_and_raw_bytes_kept(coding: str, wire: bytes) -> None:
    async with serve(page(wire, Content_Encoding=coding)) as server, fetcher() as f:
        result = await f.fetch(f"http://one.test:{server.port}/")
    assert result.body == PAGE
    assert result.raw_body == wire
    assert result.header("Content-Encoding") == coding
    assert not result.decoding_failed and not result.truncated


async def test_gzip_bomb_stops_at_the_decoded_cap() -> None:
    bomb = _gzip_bomb(64)  # 64 MiB of zeros in ~64 KiB
    cap = 256 * 1024
    served = serve(page(bomb, Content_Encoding="gzip"))
    async with served as server, fetcher(max_decoded_bytes=cap) as f:
        result = await f.fetch(f"http://one.test:{server.port}/")
    assert result.decoded_too_large and result.truncated
    assert len(result.body) == cap and not any(result.body)
    # raw_body is what came off the wire before reading stopped (the memory bound
    # itself is measured in tests/unit/fetch/test_decoding.py).
    assert result.raw_body is not None and bomb.startswith(result.raw_body)


async def test_corrupt_coding_is_flagged_not_raised() -> None:
    served = serve(page(b"not gzip at all", Content_Encoding="gzip"))
    async with served as server, fetcher() as f:
        result = await f.fetch(f"http://one.test:{server.port}/")
    assert result.decoding_failed
    assert result.body == b"not gzip at all"


async def test_hanging_server_is_a_timeout() -> None:
    release = asyncio.Event()

    async def hang(request: web.Request) -> web.StreamResponse:
        await release.wait()
        return web.Response(body=b"late")

    async with serve(hang) as server, fetcher(total_timeout_s=0.3) as f:
        with pytest.raises(FetchError) as caught:
            await f.fetch(f"http://one.test:{server.port}/")
        release.set()
    assert caught.value.kind == "timeout"


async def test_timeout_mid_body_returns_a_truncated_result() -> None:
    release = asyncio.Event()

    async def stall(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_length = 1000
        await response.prepare(request)
        await response.write(b"x" * 100)
        await release.wait()
        return response

    async with serve(stall) as server, fetcher(total_timeout_s=0.3) as f:
        result = await f.fetch(f"http://one.test:{server.port}/")
        release.set()
    assert result.status == 200
    assert result.truncated
    assert result.body == b"x" * 100


async def test_connection_refused_is_a_connect_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    async with fetcher() as f:
        with pytest.raises(FetchError) as caught:
            await f.fetch(f"http://one.test:{port}/")
    assert caught.value.kind == "connect"


async def test_a_certificate_that_does_not_check_out_is_refused_unless_told_not_to_check() -> None:
    """An https server whose certificate is from an unknown authority and for another
    name: refused by default (a connect error that says why), fetched with
    ``verify_tls=False`` (the --no-verify-tls flag), the exchange still encrypted."""
    authority = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("elsewhere.test").configure_cert(context)
    async with serve(page(), ssl_context=context) as server:
        url = f"https://one.test:{server.port}/"
        async with fetcher() as f:
            with pytest.raises(FetchError) as caught:
                await f.fetch(url)
        assert caught.value.kind == "connect"
        assert "certificate verify failed" in str(caught.value)
        assert not server.requests  # refused in the handshake: nothing was asked
        async with fetcher(verify_tls=False) as f:
            result = await f.fetch(url)
    assert result.status == 200 and result.body == PAGE
    assert len(server.requests) == 1 and server.requests[0].secure


@asynccontextmanager
async def connection_counter(host: str = "127.0.0.1") -> AsyncIterator[list[int]]:
    """A bare TCP listener that counts accepted connections: [port, connections]."""
    state = [0, 0]

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state[1] += 1
        writer.close()

    server = await asyncio.start_server(accepted, host, 0)
    state[0] = server.sockets[0].getsockname()[1]
    try:
        yield state
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("host", ["one.test", "127.0.0.1", "[::ffff:127.0.0.1]"])
async def test_loopback_is_blocked_by_default_and_never_connected(host: str) -> None:
    async with connection_counter() as state, fetcher(allow_private_networks=False) as f:
        with pytest.raises(BlockedAddress) as caught:
            await f.fetch(f"http://{host}:{state[0]}/")
        with pytest.raises(BlockedAddress):
            await f.resolve(host.strip("[]"))
        await asyncio.sleep(0.05)
    assert caught.value.kind == "blocked"
    assert "loopback" in str(caught.value)
    assert state[1] == 0


def _only_127_0_0_2_is_public(address: str) -> str | None:
    return None if address == "127.0.0.2" else is_blocked_address(address)


async def test_a_blocked_address_is_skipped_for_an_allowed_one() -> None:
    async def resolver(host: str) -> Sequence[str]:
        return ["127.0.0.1", "127.0.0.2"]

    async with serve(page(), host="127.0.0.2") as server:
        f = HttpFetcher(
            FetchConfig(), SystemClock(), resolver_fn=resolver, guard=_only_127_0_0_2_is_public
        )
        async with f:
            assert await f.resolve("mixed.test") == "127.0.0.2"
            result = await f.fetch(f"http://mixed.test:{server.port}/")
    assert result.ip == "127.0.0.2"
    assert len(server.requests) == 1


async def test_dns_rebinding_cannot_move_the_connection() -> None:
    """The first answer is checked and pinned: the connection never asks DNS again.

    Every lookup after the first answers with a private address (TTL 0, so the
    cache asks each time). Had the connection resolved the name itself, it would
    have reached the private server.
    """
    calls: list[str] = []

    async def rebinding(host: str) -> Sequence[str]:
        calls.append(host)
        return ["127.0.0.2"] if len(calls) == 1 else ["127.0.0.1"]

    public_server = serve(page(b"public"), host="127.0.0.2")
    async with public_server as public:
        private_server = serve(page(b"private"), host="127.0.0.1", port=public.port)
        config = FetchConfig(dns_ttl_s=0)
        f = HttpFetcher(
            config, SystemClock(), resolver_fn=rebinding, guard=_only_127_0_0_2_is_public
        )
        async with private_server as private, f:
            first = await f.fetch(f"http://rebind.test:{public.port}/")
            assert calls == ["rebind.test"]
            with pytest.raises(BlockedAddress):  # a new fetch sees the new answer, and refuses
                await f.fetch(f"http://rebind.test:{public.port}/")
    assert first.body == b"public" and first.ip == "127.0.0.2"
    assert private.requests == []


async def test_per_ip_cap_holds_across_host_names() -> None:
    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(0.05)
        return web.Response(body=b"ok")

    async with serve(slow, host="127.0.0.2") as server, fetcher(per_ip_concurrency=2) as f:
        async with asyncio.TaskGroup() as group:
            urls = [f"http://h{i}.test:{server.port}/" for i in range(6)]
            tasks = [group.create_task(f.fetch(url)) for url in urls]
        assert await f.resolve("h3.test") == "127.0.0.2"
    assert [t.result().status for t in tasks] == [200] * 6
    assert {t.result().ip for t in tasks} == {"127.0.0.2"}
    assert len(server.requests) == 6
    assert server.max_in_flight == 2  # capped, yet the cap is actually used


async def test_dns_failure_is_a_dns_error() -> None:
    async def nxdomain(host: str) -> Sequence[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    async with HttpFetcher(FetchConfig(), SystemClock(), resolver_fn=nxdomain) as f:
        with pytest.raises(FetchError) as caught:
            await f.fetch("http://nowhere.test/")
    assert caught.value.kind == "dns"


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://one.test/" + "a" * 3000, "too_long_url"),
        ("ftp://one.test/file", "protocol"),
        ("http:///no-host", "protocol"),
        ("http://one.test:99999/", "protocol"),
    ],
)
async def test_urls_refused_before_any_connection(url: str, kind: str) -> None:
    async with fetcher() as f:
        with pytest.raises(FetchError) as caught:
            await f.fetch(url)
    assert caught.value.kind == kind


def test_works_under_uvloop() -> None:
    uvloop = pytest.importorskip("uvloop")

    async def scenario() -> tuple[int, bytes]:
        served = serve(page(gzip.compress(PAGE), Content_Encoding="gzip"))
        async with served as server, fetcher() as f:
            result = await f.fetch(f"http://one.test:{server.port}/")
            return result.status, result.body

    assert uvloop.run(scenario()) == (200, PAGE)


async def test_closed_fetcher_refuses_work() -> None:
    f = fetcher()
    await f.aclose()
    with pytest.raises(RuntimeError):
        await f.fetch("http://one.test/")


@pytest.mark.parametrize(("keepalive_s", "connections"), [(15.0, 1), (0.0, 3)])
async def test_connections_are_reused_unless_keepalive_is_off(
    keepalive_s: float, connections: int
) -> None:
    async with serve(page()) as server, fetcher(keepalive_timeout_s=keepalive_s) as f:
        results = [await f.fetch(f"http://one.test:{server.port}/") for _ in range(3)]
    assert [r.body for r in results] == [PAGE] * 3
    assert len(set(server.peers)) == connections


# -- no transparent retry: one fetch, at most one request on the wire ---------------------


@dataclass
class CuttingServer:
    """A raw HTTP/1.1 server that answers requests whole, then cuts some off.

    ``cuts[i]`` says what happens to the i-th request (0-based, over all connections):
    ``"ok"`` answers it (keep-alive), ``"head"`` closes the connection as soon as the
    request head is read, ``"body"`` sends the head and half the body, then closes.
    """

    cuts: Sequence[str]
    port: int = 0
    requests: list[tuple[int, str]] = field(default_factory=list)  # (connection, target)
    _connections: int = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections += 1
        conn = self._connections
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                target = head.split(b" ", 2)[1].decode()
                index = len(self.requests)
                self.requests.append((conn, target))
                cut = self.cuts[index] if index < len(self.cuts) else "ok"
                if cut == "head":
                    break
                answer = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(PAGE)
                if cut == "body":
                    writer.write(answer + PAGE[: len(PAGE) // 2])
                    await writer.drain()
                    break
                writer.write(answer + PAGE)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def cutting(cuts: Sequence[str]) -> AsyncIterator[CuttingServer]:
    server = CuttingServer(cuts)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    server.port = listener.sockets[0].getsockname()[1]
    try:
        yield server
    finally:
        listener.close()


async def test_a_connection_closed_before_the_head_is_not_retried() -> None:
    # A fresh connection cut at once: aiohttp would send the GET again on a new one.
    async with cutting(["head"]) as server, fetcher() as f:
        with pytest.raises(FetchError) as caught:
            await f.fetch(f"http://one.test:{server.port}/robots.txt")
    assert caught.value.kind in ("protocol", "connect")
    assert server.requests == [(1, "/robots.txt")]


async def test_a_reused_connection_closed_before_the_head_is_not_retried() -> None:
    # The keep-alive race: the server drops an idle connection as the next GET goes out.
    async with cutting(["ok", "head", "ok"]) as server, fetcher() as f:
        first = await f.fetch(f"http://one.test:{server.port}/a")
        with pytest.raises(FetchError):
            await f.fetch(f"http://one.test:{server.port}/b")
        third = await f.fetch(f"http://one.test:{server.port}/c")
    assert first.body == third.body == PAGE
    assert server.requests == [(1, "/a"), (1, "/b"), (2, "/c")]


async def test_a_body_cut_off_is_one_truncated_request() -> None:
    async with cutting(["body", "ok"]) as server, fetcher() as f:
        cut = await f.fetch(f"http://one.test:{server.port}/a")
        whole = await f.fetch(f"http://one.test:{server.port}/b")
    assert cut.truncated and cut.body == PAGE[: len(PAGE) // 2]
    assert not whole.truncated and whole.body == PAGE
    assert server.requests == [(1, "/a"), (2, "/b")]


async def test_a_limited_fetcher_times_out_at_its_own_limit() -> None:
    release = asyncio.Event()

    async def hang(request: web.Request) -> web.StreamResponse:
        await release.wait()
        return web.Response(body=b"late")

    # The fetcher's own limit (60 s) would outlast the test; the view's (0.3 s) ends it.
    async with serve(hang) as server, fetcher(total_timeout_s=60.0) as f:
        with pytest.raises(FetchError) as caught:
            await f.limited(0.3).fetch(f"http://one.test:{server.port}/")
        release.set()
    assert caught.value.kind == "timeout"


async def test_a_fetch_waiting_for_its_address_is_counted_and_announced() -> None:
    release = asyncio.Event()
    arrived = asyncio.Event()

    async def hold(request: web.Request) -> web.StreamResponse:
        arrived.set()
        await release.wait()
        return web.Response(body=b"ok")

    waits: list[int] = []
    waited = asyncio.Event()

    def on_ip_wait() -> None:
        waits.append(1)
        waited.set()

    overrides = {"h1.test": ["127.0.0.2"], "h2.test": ["127.0.0.2"]}
    f = HttpFetcher(
        FetchConfig(allow_private_networks=True, per_ip_concurrency=1, total_timeout_s=30.0),
        SystemClock(),
        dns_overrides=overrides,
        on_ip_wait=on_ip_wait,
    )
    async with serve(hold, host="127.0.0.2") as server, f:
        first = asyncio.ensure_future(f.fetch(f"http://h1.test:{server.port}/"))
        await arrived.wait()
        assert f.waiting_for_ip == 0 and not waits  # the first took the free slot
        second = asyncio.ensure_future(f.fetch(f"http://h2.test:{server.port}/"))
        await waited.wait()
        assert f.waiting_for_ip == 1  # the second waits for the address, holding nothing
        assert server.in_flight == 1
        release.set()
        results = await asyncio.gather(first, second)
    assert [r.status for r in results] == [200, 200]
    assert f.waiting_for_ip == 0
    assert waits == [1]
    assert server.max_in_flight == 1


class _PeekingGate:
    """An :class:`~courtly.fetch.IpGate` that, as each slot is given back, notes whether the
    server can already see the exchange's connection closed (an end of stream queued on
    its side: the client's socket was closed before the slot went)."""

    def __init__(self, listener: socket.socket) -> None:
        self._listener = listener
        self.closed_at_release: list[bool] = []

    def hold(self, ip: str) -> _PeekingGate:
        return self

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc_info: object) -> None:
        conn, _ = self._listener.accept()
        with conn:
            self.closed_at_release.append(_peer_closed(conn))


def _peer_closed(conn: socket.socket) -> bool:
    """Whether the peer of ``conn`` has closed its end (read what it sent, then the end of
    the stream), without waiting."""
    while True:
        try:
            if not conn.recv(65536, socket.MSG_DONTWAIT):
                return True
        except BlockingIOError:
            return False


async def test_a_timed_out_exchange_closes_its_connection_before_giving_its_ip_slot_back() -> None:
    """A request that never gets an answer (a hanging robots.txt) holds its address's slot
    until its socket is closed, not merely until aiohttp has been told to close it:
    otherwise another process sharing the per-IP cap may send a request to the address
    while this connection is still open."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.2", 0))
        listener.listen()  # accepted by the kernel, never answered
        listener.setblocking(False)
        port = listener.getsockname()[1]
        gate = _PeekingGate(listener)
        f = HttpFetcher(
            FetchConfig(allow_private_networks=True, total_timeout_s=0.2),
            SystemClock(),
            dns_overrides={"h1.test": ["127.0.0.2"]},
            ip_gate=gate,
        )
        async with f:
            with pytest.raises(FetchError) as caught:
                await f.fetch(f"http://h1.test:{port}/robots.txt")
    assert caught.value.kind == "timeout"
    assert gate.closed_at_release == [True]


async def test_a_request_whose_lease_ran_out_while_it_waited_for_its_address_is_not_sent() -> None:
    """A fetch task's deadline (courtly.fetch.deadline) is checked once the address's slot
    is held, right before sending: a fetch that waited past it behind another host on the
    same address raises ``lease_expired`` and makes no request; one without a deadline, or
    within it, is sent."""

    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(0.3)
        return web.Response(body=b"ok")

    async def under_lease(f: HttpFetcher, url: str, not_after: float | None) -> object:
        REQUEST_NOT_AFTER.set(not_after)  # this task's own value, as a crawl's fetch task
        try:
            return (await f.fetch(url)).status
        except FetchError as error:
            return error.kind

    async with serve(slow, host="127.0.0.2") as server, fetcher(per_ip_concurrency=1) as f:
        now = SystemClock().now()
        async with asyncio.TaskGroup() as group:
            first = group.create_task(under_lease(f, f"http://h0.test:{server.port}/a", None))
            await asyncio.sleep(0.05)  # h0 holds 127.0.0.2's one slot for 0.3 s
            late = group.create_task(under_lease(f, f"http://h1.test:{server.port}/b", now + 0.1))
            fine = group.create_task(under_lease(f, f"http://h2.test:{server.port}/c", now + 60))
        assert REQUEST_NOT_AFTER.get() is None  # the tasks' values did not leak out
        assert (first.result(), late.result(), fine.result()) == (200, "lease_expired", 200)
    assert sorted(r.path for r in server.requests) == ["/a", "/c"]
