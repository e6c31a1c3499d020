"""The sandbox HTTP server: one port on many loopback addresses, virtual hosts by ``Host``.

A small HTTP/1.1 server on :class:`asyncio.Protocol` (keep-alive, one request
at a time per connection, ``GET``/``HEAD``): ordinary pages are answered
synchronously from a cache of rendered bytes, so one core serves thousands of
requests a second; slow answers, hangs and streamed pages run as tasks.
Every request is logged by :class:`~courtly.sandbox.request_log.RequestLogWriter`.

Usage::

    async with SandboxServer(SandboxSpec.small(), workdir=tmp) as web:
        web.hosts_file, web.seeds, web.log_path, web.base_urls
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import socket
import tempfile
import zlib
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, cast

from courtly.clock import Clock, SystemClock
from courtly.sandbox.changing import ChangingSite
from courtly.sandbox.hosts_file import write_hosts_file
from courtly.sandbox.request_log import RequestLogWriter, RequestRecord
from courtly.sandbox.resources import BigPage, Document, GzipBomb, Hang, Page, Redirect, Resource
from courtly.sandbox.spec import SandboxSpec
from courtly.sandbox.truth import SandboxTruth
from courtly.sandbox.world import SandboxWorld

__all__ = ["Cut", "DropPlan", "SandboxServer", "make_gzip_bomb"]

Cut = Literal["head", "body"]
"""Where a connection is cut: right after the request head (no response at all), or
after the response head and half of the body."""


@dataclass(frozen=True, slots=True)
class DropPlan:
    """Connections the server cuts off on purpose, to test a client's failure paths.

    ``robots`` maps a host name to where each of its robots.txt requests is cut
    (every one of them, its redirect target included). ``page_every`` cuts every
    ``page_every``-th request for any other path of a host (counted per host from
    1; 0 cuts none); those cuts alternate on each host, ``head`` first, then
    ``body``. A cut at ``head`` closes the connection without a byte of response
    and is logged with status 0; a cut at ``body`` is logged with the status sent
    and the body bytes written. Nothing is cut by default.
    """

    robots: tuple[tuple[str, Cut], ...] = ()
    page_every: int = 0

    def __post_init__(self) -> None:
        if self.page_every < 0:
            raise ValueError("page_every must be >= 0")
        if any(cut not in ("head", "body") for _, cut in self.robots):
            raise ValueError("a cut is 'head' or 'body'")


_MAX_HEAD_BYTES = 64 * 1024
_CACHE_ENTRIES = 4096
_CONDITIONAL = {"if-none-match": "If-None-Match", "if-modified-since": "If-Modified-Since"}
_CHUNK_BYTES = 256 * 1024
_REASONS = {
    200: "OK",
    304: "Not Modified",
    301: "Moved Permanently",
    302: "Found",
    307: "Temporary Redirect",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}


def make_gzip_bomb(inflated_bytes: int) -> bytes:
    """A single-member gzip stream of ``inflated_bytes`` (an HTML prefix, then spaces)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    prefix = b"<!doctype html><html><body><p>"
    parts = [packer.compress(prefix)]
    block = b" " * (1 << 20)
    left = inflated_bytes - len(prefix)
    while left > 0:
        piece = block if left >= len(block) else block[:left]
        parts.append(packer.compress(piece))
        left -= len(piece)
    parts.append(packer.flush())
    return b"".join(parts)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A fixed response: status, header block (status line + headers, no blank line), body."""

    status: int
    head: bytes
    body: bytes


def _head(status: int, headers: list[tuple[str, str]], length: int) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}", "Server: courtly-sandbox"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


def _prepare(
    status: int, content_type: str, body: bytes, extra: list[tuple[str, str]]
) -> _Prepared:
    headers = [("Content-Type", content_type), *extra]
    return _Prepared(status, _head(status, headers, len(body)), body)


class _Request:
    __slots__ = ("close", "conditional", "host", "method", "start_at", "target", "ua")

    def __init__(
        self,
        method: str,
        target: str,
        host: str,
        ua: str,
        close: bool,
        start_at: float,
        conditional: dict[str, str] | None = None,
    ) -> None:
        self.method = method
        self.target = target
        self.host = host
        self.ua = ua
        self.close = close
        self.start_at = start_at
        self.conditional = conditional  # If-None-Match / If-Modified-Since, when sent


class _Connection(asyncio.Protocol):
    """One client connection: parses request heads and hands them to the server."""

    def __init__(self, server: SandboxServer, ip: str, port: int) -> None:
        self.server = server
        self.ip = ip
        self.port = port
        self.conn = 0
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.busy = False
        self.closed = False
        self.skip_bytes = 0
        self._paused = False
        self._in_process = False
        self._drained: asyncio.Future[None] | None = None
        self._lost: asyncio.Future[None] | None = None
        self.lost_at: float | None = None
        """When the server first saw the peer's end of the connection (its end of stream
        read, or the connection lost), on the server's clock; ``None`` while it is open."""

    # -- asyncio.Protocol -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is no subclass
        self.conn = self.server._next_conn_id()
        self.server._connections.add(self)

    def data_received(self, data: bytes) -> None:
        if self.skip_bytes:
            cut = min(self.skip_bytes, len(data))
            self.skip_bytes -= cut
            data = data[cut:]
        self.buffer += data
        if not self.busy:
            self.process()

    def eof_received(self) -> bool | None:
        self._note_lost()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._note_lost()
        self.closed = True
        self.server._connections.discard(self)
        for waiter in (self._lost, self._drained):
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    def _note_lost(self) -> None:
        # Stamped in the read callback itself: the wake-up of a task waiting on
        # ``_lost`` comes one or two loop iterations later, which on a busy loop is long
        # enough for a request on another connection to be stamped before it.
        if self.lost_at is None:
            self.lost_at = self.server.clock.now()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    # -- helpers for the server -----------------------------------------------------

    async def drain(self) -> bool:
        """Wait until the transport's buffer is below its low-water mark (or the peer left).

        True if it had to wait and the peer is still there: the peer then acknowledged
        bytes after the write that filled the buffer, so it was open after that write.
        """
        waited = False
        while self._paused and not self.closed:
            waited = True
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained
        return waited and not self.closed

    async def linger(self, delay_s: float) -> bool:
        """Sleep ``delay_s`` seconds; return ``False`` at once if the peer goes away meanwhile."""
        if self.closed:
            return False
        if self._lost is None:
            self._lost = asyncio.get_running_loop().create_future()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._lost), delay_s)
        return not self.closed

    def write(self, data: bytes) -> float:
        """Hand ``data`` to the socket; return the time taken just before doing so.

        The stamp comes *before* the write, so a client cannot hold the bytes
        earlier than it: a stamp taken after the write would include whatever
        delays this thread between the system call and its return (the GIL, the
        OS scheduler), which on a loaded machine is tens of milliseconds.
        """
        at = self.server.clock.now()
        if self.transport is not None and not self.closed:
            self.transport.write(data)
        return at

    def writelines(self, parts: tuple[bytes, ...]) -> float:
        """Like :meth:`write` for several buffers at once (one system call)."""
        at = self.server.clock.now()
        if self.transport is not None and not self.closed:
            self.transport.writelines(parts)
        return at

    def finish(self, close: bool) -> None:
        """A response is complete: close, or go on with buffered requests."""
        self.busy = False
        if close:
            if self.transport is not None:
                self.transport.close()
            self.closed = True
            return
        if self.buffer and not self.closed and not self._in_process:
            self.process()

    def process(self) -> None:
        self._in_process = True
        try:
            self._process()
        finally:
            self._in_process = False

    def _process(self) -> None:
        while not self.busy and not self.closed:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > _MAX_HEAD_BYTES:
                    self._reject(431)
                return
            head = bytes(self.buffer[:end])
            del self.buffer[: end + 4]
            self._on_head(head)

    def _reject(self, status: int) -> None:
        body = f"{status} {_REASONS.get(status, '')}\n".encode()
        self.write(_head(status, [("Connection", "close")], len(body)) + b"\r\n" + body)
        self.finish(close=True)

    def _on_head(self, head: bytes) -> None:
        start_at = self.server.clock.now()
        try:
            text = head.decode("latin-1")
            request_line, _, header_text = text.partition("\r\n")
            method, target, version = request_line.split(" ")
        except ValueError:
            self._reject(400)
            return
        host = ua = connection = ""
        length = 0
        conditional: dict[str, str] | None = None
        for line in header_text.split("\r\n"):
            name, _, value = line.partition(":")
            key = name.strip().lower()
            if key == "host":
                host = value.strip()
            elif key == "user-agent":
                ua = value.strip()
            elif key == "connection":
                connection = value.strip().lower()
            elif key == "content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    self._reject(400)
                    return
            elif key == "transfer-encoding":
                self._reject(501)
                return
            elif key in _CONDITIONAL:
                conditional = conditional or {}
                conditional[_CONDITIONAL[key]] = value.strip()
        if length:
            taken = min(length, len(self.buffer))
            del self.buffer[:taken]
            self.skip_bytes = length - taken
        if target.startswith(("http://", "https://")):
            rest = target.split("://", 1)[1]
            slash = rest.find("/")
            host = host or (rest if slash < 0 else rest[:slash])
            target = "/" if slash < 0 else rest[slash:]
        close = connection != "keep-alive" if version == "HTTP/1.0" else connection == "close"
        host = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        request = _Request(
            method, target, host.lower().rstrip("."), ua, close, start_at, conditional
        )
        self.busy = True
        self.server._handle(self, request)


class SandboxServer:
    """Serve ``spec`` on loopback; write the hosts file, seeds file and request log.

    Files go to ``workdir`` (a new temporary directory, kept afterwards, if
    ``None``): ``hosts``, ``seeds.txt``, ``sandbox.json`` (spec, port and paths)
    and ``requests.jsonl`` (or ``log_path``). ``port`` overrides ``spec.port``
    (0 = pick a free one). ``reuse_port`` sets ``SO_REUSEPORT`` so that several
    processes can share the port; ``worker_index`` keeps their connection ids
    apart. ``clock`` stamps the log (the system clock by default). ``drops``
    cuts connections off on purpose (see :class:`DropPlan`).
    """

    def __init__(
        self,
        spec: SandboxSpec,
        *,
        log_path: Path | str | None = None,
        workdir: Path | str | None = None,
        clock: Clock | None = None,
        port: int | None = None,
        reuse_port: bool = False,
        worker_index: int = 0,
        write_files: bool = True,
        drops: DropPlan | None = None,
        changing: Mapping[str, ChangingSite] | None = None,
    ) -> None:
        self.spec = spec
        self._changing = dict(changing or {})
        self._drops = drops if drops is not None and (drops.robots or drops.page_every) else None
        self._robots_cuts: dict[str, Cut] = dict(drops.robots) if drops is not None else {}
        self._page_counts: dict[str, int] = {}
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.workdir = Path(workdir) if workdir is not None else None
        self._log_path = Path(log_path) if log_path is not None else None
        self._want_port = spec.port if port is None else port
        self._reuse_port = reuse_port
        self._worker_index = worker_index
        self._write_files = write_files
        self._servers: list[asyncio.Server] = []
        self._connections: set[_Connection] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._conn_counter = 0
        self._host_counts: dict[str, int] = {}
        self._cache: OrderedDict[tuple[str, str], _Prepared] = OrderedDict()
        self._bomb: bytes = b""
        self._big_chunk: bytes = b""
        self._world: SandboxWorld | None = None
        self._log: RequestLogWriter | None = None
        self._stopping = False

    # -- public surface ---------------------------------------------------------------

    @property
    def world(self) -> SandboxWorld:
        if self._world is None:
            raise RuntimeError("the sandbox server is not started")
        return self._world

    @property
    def truth(self) -> SandboxTruth:
        """Ground truth for this web (robots, crawl delays, expected pages)."""
        return SandboxTruth(self.world)

    @property
    def port(self) -> int:
        return self.world.port

    @property
    def hosts(self) -> dict[str, str]:
        """Host name -> IPv4 address (dead hosts included)."""
        return self.world.host_addresses()

    @property
    def seeds(self) -> tuple[str, ...]:
        """The front page of every host."""
        return self.world.seeds()

    @property
    def base_urls(self) -> dict[str, str]:
        """Host name -> ``http://host:port/``."""
        return {h.name: self.world.url(h.name) for h in self.world.hosts}

    @property
    def hosts_file(self) -> Path:
        return self._dir() / "hosts"

    @property
    def seeds_file(self) -> Path:
        return self._dir() / "seeds.txt"

    @property
    def info_file(self) -> Path:
        return self._dir() / "sandbox.json"

    @property
    def log_path(self) -> Path:
        return self._log_path if self._log_path is not None else self._dir() / "requests.jsonl"

    @property
    def requests_logged(self) -> int:
        return self._log.count if self._log is not None else 0

    def info(self) -> dict[str, object]:
        """What a client needs: paths, port, spec (JSON-ready)."""
        return {
            "port": self.port,
            "hosts_file": str(self.hosts_file),
            "seeds_file": str(self.seeds_file),
            "log_path": str(self.log_path),
            "workdir": str(self._dir()),
            "n_hosts": len(self.world.hosts),
            "ips": list(self.world.layout.live_ips),
            "dead_ips": list(self.world.layout.dead_ips),
            "spec": json.loads(self.spec.to_json()),
        }

    async def __aenter__(self) -> SandboxServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Bind every live address, write the files, start logging."""
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="courtly-sandbox-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        probe = SandboxWorld(self.spec, self._want_port or 1)
        live_ips, dead_ips = probe.layout.live_ips, probe.layout.dead_ips
        port = await self._bind(live_ips, dead_ips)
        self._world = SandboxWorld(self.spec, port)
        world = self._world
        if any(h.hostile for h in world.hosts):
            loop = asyncio.get_running_loop()
            self._bomb = await loop.run_in_executor(None, make_gzip_bomb, self.spec.bomb_bytes)
            block = world.filler.encode() * (1 + _CHUNK_BYTES // max(1, len(world.filler)))
            self._big_chunk = block[:_CHUNK_BYTES]
        if self._write_files:
            comment = f"courtly sandbox: seed {self.spec.seed}, port {port}"
            write_hosts_file(self.hosts_file, world.host_addresses(), comment=comment)
            self.seeds_file.write_text("\n".join(world.seeds()) + "\n", encoding="utf-8")
            self.info_file.write_text(json.dumps(self.info(), indent=2) + "\n", encoding="utf-8")
        self._log = RequestLogWriter(self.log_path)
        self._log.start()

    async def stop(self) -> None:
        """Stop listening, drop open connections, finish tasks, flush the log."""
        self._stopping = True
        for server in self._servers:
            server.close()
        for conn in list(self._connections):
            if conn.transport is not None:
                conn.transport.abort()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5.0)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2.0)
        self._servers.clear()
        if self._log is not None:
            await self._log.aclose()

    # -- binding ----------------------------------------------------------------------

    def _dir(self) -> Path:
        if self.workdir is None:
            raise RuntimeError("the sandbox server is not started")
        return self.workdir

    async def _bind(self, live_ips: tuple[str, ...], dead_ips: tuple[str, ...]) -> int:
        loop = asyncio.get_running_loop()
        for _ in range(50):
            port = self._want_port or _free_port(live_ips[0])
            probes: list[socket.socket] = []
            servers: list[asyncio.Server] = []
            try:
                for ip in dead_ips:  # nothing may answer there, not even a wildcard listener
                    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    probes.append(sock)
                    sock.bind((ip, port))
                for ip in live_ips:
                    server = await loop.create_server(
                        self._factory(ip, port),
                        host=ip,
                        port=port,
                        reuse_address=True,
                        reuse_port=self._reuse_port or None,
                        backlog=2048,
                    )
                    servers.append(server)
            except OSError as error:
                for server in servers:
                    server.close()
                if self._want_port or error.errno != errno.EADDRINUSE:
                    raise
                continue
            finally:
                for sock in probes:
                    sock.close()
            self._servers = servers
            return port
        raise OSError(errno.EADDRINUSE, "no port free on every sandbox address")

    # -- serving ----------------------------------------------------------------------

    def _factory(self, ip: str, port: int) -> Callable[[], _Connection]:
        return lambda: _Connection(self, ip, port)

    def _next_conn_id(self) -> int:
        self._conn_counter += 1
        return self._worker_index * 1_000_000_000 + self._conn_counter

    def _log_request(
        self,
        conn: _Connection,
        request: _Request,
        status: int,
        nbytes: int,
        retry_after_s: float | None = None,
        *,
        end_at: float | None = None,
        cut: bool = False,
    ) -> None:
        """Log ``request``; ``end_at`` is when its last byte was sent (default: now);
        ``cut``: the connection was cut off on purpose (:class:`DropPlan`).

        ``end_at`` is the stamp :meth:`_Connection.write` took before handing the
        response's last byte to the socket; "now" is for requests that ended
        without one (the client left, or a hang was cut off).
        """
        if self._log is None:
            return
        self._log.write(
            RequestRecord(
                start_at=request.start_at,
                end_at=self.clock.now() if end_at is None else end_at,
                host=request.host,
                ip=conn.ip,
                port=conn.port,
                path=request.target,
                status=status,
                ua=request.ua,
                bytes=nbytes,
                conn=conn.conn,
                retry_after_s=retry_after_s,
                method=request.method,
                cut=cut,
            )
        )

    def _send(self, conn: _Connection, request: _Request, prepared: _Prepared) -> tuple[int, float]:
        """Write the whole response: (body bytes, the stamp taken just before writing)."""
        close = request.close or self._stopping
        tail = b"Connection: close\r\n\r\n" if close else b"\r\n"
        body = b"" if request.method == "HEAD" else prepared.body
        return len(body), conn.writelines((prepared.head, tail, body))

    def _handle(self, conn: _Connection, request: _Request) -> None:
        world = self.world
        if request.method not in ("GET", "HEAD"):
            refusal = _prepare(405, "text/plain", b"GET or HEAD only\n", [("Allow", "GET, HEAD")])
            self._complete(conn, request, refusal)
            return
        site = self._changing.get(request.host)
        if site is not None and site.page(request.target.partition("?")[0]) is not None:
            self._complete(conn, request, self._changing_page(site, request))
            return
        if self._drops is not None:
            cut = self._cut_for(request)
            if cut is not None:
                self._cut_off(conn, request, cut)
                return
        profile = world.profile(request.host)
        retry_after_s: float | None = None
        prepared: _Prepared | None = None
        if (
            profile is not None
            and profile.flaky
            and request.target.partition("?")[0] not in world.robots_paths(request.host)
        ):
            count = self._host_counts.get(request.host, 0) + 1
            self._host_counts[request.host] = count
            overload = world.overload(profile, count)
            if overload is not None:
                status, retry_after = overload
                retry_after_s = float(retry_after)
                prepared = _prepare(
                    status, "text/plain", b"slow down\n", [("Retry-After", str(retry_after))]
                )
        if prepared is None:
            resource = self._resource(request)
            if isinstance(resource, Hang | BigPage | GzipBomb):
                self._spawn(self._serve_special(conn, request, resource))
                return
            prepared = self._prepared(request, resource)
        if world.latency_s(profile) > 0:
            self._spawn(self._serve_later(conn, request, prepared, retry_after_s))
            return
        self._complete(conn, request, prepared, retry_after_s)

    def _changing_page(self, site: ChangingSite, request: _Request) -> _Prepared:
        """A page of a :class:`ChangingSite` (``changing=``), answered by its clock."""
        path = request.target.partition("?")[0]
        status, headers, body = site.answer(path, request.conditional or {}, request.target)
        return _Prepared(status, _head(status, headers, len(body)), body)

    def _cut_for(self, request: _Request) -> Cut | None:
        """Where :class:`DropPlan` cuts ``request`` off, or ``None`` to answer it."""
        assert self._drops is not None
        host = request.host
        if request.target.partition("?")[0] in self.world.robots_paths(host):
            return self._robots_cuts.get(host)
        every = self._drops.page_every
        if not every:
            return None
        count = self._page_counts.get(host, 0) + 1
        self._page_counts[host] = count
        if count % every:
            return None
        return "head" if (count // every) % 2 else "body"

    def _cut_off(self, conn: _Connection, request: _Request, cut: Cut) -> None:
        """Close the connection after the request head, or halfway through the body."""
        if cut == "head":
            ended_at = self.clock.now()
            status = nbytes = 0
        else:
            resource = self._resource(request)
            if isinstance(resource, Hang | BigPage | GzipBomb):
                prepared = _prepare(200, "text/html", b"<p>cut off</p>\n" * 64, [])
            else:
                prepared = self._prepared(request, resource)
            body = b"" if request.method == "HEAD" else prepared.body
            nbytes = len(body) // 2
            ended_at = conn.writelines((prepared.head, b"\r\n", body[:nbytes]))
            status = prepared.status
        if conn.transport is not None:
            conn.transport.close()  # a FIN after what was written, as a closing server sends
        self._log_request(conn, request, status, nbytes, end_at=ended_at, cut=True)
        conn.finish(close=True)

    def _complete(
        self,
        conn: _Connection,
        request: _Request,
        prepared: _Prepared,
        retry_after_s: float | None = None,
    ) -> None:
        nbytes, sent_at = self._send(conn, request, prepared)
        self._log_request(conn, request, prepared.status, nbytes, retry_after_s, end_at=sent_at)
        conn.finish(close=request.close or self._stopping)

    def _resource(self, request: _Request) -> Resource:
        return self.world.resolve(request.host, request.target)

    def _prepared(self, request: _Request, resource: Resource) -> _Prepared:
        key = (request.host, request.target)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        prepared = self._build(resource)
        self._cache[key] = prepared
        if len(self._cache) > _CACHE_ENTRIES:
            self._cache.popitem(last=False)
        return prepared

    def _build(self, resource: Resource) -> _Prepared:
        if isinstance(resource, Page):
            extra = [("X-Robots-Tag", "nofollow")] if resource.header_nofollow else []
            return _prepare(200, "text/html; charset=utf-8", self.world.render(resource), extra)
        if isinstance(resource, Redirect):
            body = f'<a href="{resource.location}">moved</a>\n'.encode()
            return _prepare(resource.status, "text/html", body, [("Location", resource.location)])
        if isinstance(resource, Document):
            return _prepare(resource.status, resource.content_type, resource.body, [])
        raise TypeError(f"not a fixed resource: {resource!r}")

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve_later(
        self,
        conn: _Connection,
        request: _Request,
        prepared: _Prepared,
        retry_after_s: float | None,
    ) -> None:
        latency_s = self.world.latency_s(self.world.profile(request.host))
        if await conn.linger(latency_s) and not self._stopping:
            self._complete(conn, request, prepared, retry_after_s)
        else:
            self._log_request(conn, request, 0, 0)
            conn.finish(close=True)

    async def _serve_special(
        self, conn: _Connection, request: _Request, resource: Resource
    ) -> None:
        latency_s = self.world.latency_s(self.world.profile(request.host))
        if latency_s > 0 and not await conn.linger(latency_s):
            self._log_request(conn, request, 0, 0)
            conn.finish(close=True)
            return
        if isinstance(resource, Hang):
            await conn.linger(resource.hang_s)
            # the client gave up (when the server first saw it), or we abort now
            ended_at = conn.lost_at if conn.lost_at is not None else self.clock.now()
            if conn.transport is not None:
                conn.transport.abort()
            self._log_request(conn, request, 0, 0, end_at=ended_at)
            conn.finish(close=True)
            return
        if isinstance(resource, GzipBomb):
            head = _head(
                200,
                [("Content-Type", "text/html; charset=utf-8"), ("Content-Encoding", "gzip")],
                len(self._bomb),
            )
            self._complete(conn, request, _Prepared(200, head, self._bomb))
            return
        assert isinstance(resource, BigPage)
        close = request.close or self._stopping
        head = _head(200, [("Content-Type", "text/html; charset=utf-8")], resource.size_bytes)
        end_at = conn.write(head + (b"Connection: close\r\n\r\n" if close else b"\r\n"))
        sent = 0
        if request.method != "HEAD":
            # A client may close mid-stream (at its size cap) while writes still go out:
            # the end logged is the last write the client is known to have been there
            # after (it acknowledged later bytes), so it is never after the client left.
            end_at = request.start_at
            chunk = memoryview(self._big_chunk)
            while sent < resource.size_bytes and not conn.closed and not self._stopping:
                piece = chunk[: min(len(chunk), resource.size_bytes - sent)]
                written_at = conn.write(bytes(piece))
                sent += len(piece)
                if await conn.drain():
                    end_at = written_at
        complete = sent >= resource.size_bytes or request.method == "HEAD"
        self._log_request(conn, request, 200, sent, end_at=end_at)
        conn.finish(close=close or not complete)


def _free_port(ip: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((ip, 0))
        port: int = sock.getsockname()[1]
        return port
