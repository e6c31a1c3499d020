"""The dashboard: one offline page and its JSON, served by aiohttp in the crawl's loop.

Routes: ``/`` (the page, no CDN, no web fonts), ``/api/snapshot``,
``/api/hosts?sort=queued|next_allowed|errors|delay|requests&n=50`` (n <= 1000),
``/api/history`` (an hour at 1 Hz), ``/metrics`` (Prometheus text), ``/events``
(server-sent events: a snapshot per second, ``retry: 2000``; the page falls back to
polling ``/api/snapshot``, forced with ``?poll=1``). Bound to 127.0.0.1 unless told
otherwise; any other address needs a token, sent as ``Authorization: Bearer TOKEN`` or
``?token=TOKEN`` (the page passes on the one in its own address).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
from importlib import resources
from typing import Any

from aiohttp import web

from courtly.observe.hosts import SORTS
from courtly.observe.metrics import CONTENT_TYPE, metrics_text
from courtly.observe.sources import SnapshotSource

__all__ = ["Dashboard", "is_loopback", "parse_listen"]

_MAX_N = 1_000


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_listen(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` (``[::1]:PORT`` for IPv6) -> ``(host, port)``; host 127.0.0.1."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65_535:
        raise ValueError(f"not a [HOST:]PORT: {text!r}")
    return host, int(port)


def _page() -> bytes:
    return resources.files("courtly.observe").joinpath("static/index.html").read_bytes()


class Dashboard:
    """Serve ``source`` on ``host:port`` (0: a free port; see :attr:`port` once started)."""

    def __init__(
        self,
        source: SnapshotSource,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        token: str | None = None,
        sse_interval_s: float = 1.0,
    ) -> None:
        if not is_loopback(host) and not token:
            raise ValueError(f"the dashboard on {host} (not loopback) needs a token")
        self._source = source
        self._host = host
        self._port = port
        self._token = token
        self._sse_interval_s = sse_interval_s
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._encoded: tuple[object, bytes] = (None, b"")
        """The latest snapshot and its JSON (encoded once, however many clients)."""
        self.port = port

    @property
    def url(self) -> str:
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self.port}/"

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        app.router.add_get("/", self._index)
        app.router.add_get("/api/snapshot", self._snapshot)
        app.router.add_get("/api/hosts", self._hosts)
        app.router.add_get("/api/history", self._history)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/events", self._events)
        return app

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        for address in self._runner.addresses:
            self.port = int(address[1])
            break

    async def stop(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Dashboard:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self._token:
            given = request.query.get("token", "")
            header = request.headers.get("Authorization", "")
            if header.startswith("Bearer "):
                given = header[7:]
            if not hmac.compare_digest(given.encode(), self._token.encode()):
                raise web.HTTPUnauthorized(text="a dashboard token is required\n")
        response: web.StreamResponse = await handler(request)
        return response

    async def _index(self, request: web.Request) -> web.Response:
        return web.Response(
            body=_page(),
            content_type="text/html",
            headers={"Cache-Control": "no-store", "Content-Security-Policy": _CSP},
        )

    async def _snapshot(self, request: web.Request) -> web.Response:
        latest = self._source.latest()
        if latest is None:
            return web.json_response({"error": "no snapshot yet"}, status=503)
        return web.Response(body=self._json(latest), content_type="application/json")

    def _json(self, latest: dict[str, Any]) -> bytes:
        """``latest`` as compact JSON, encoded once per snapshot (``/api/snapshot`` and
        every ``/events`` stream share it)."""
        if self._encoded[0] is not latest:
            self._encoded = (latest, json.dumps(latest, separators=(",", ":")).encode())
        return self._encoded[1]

    async def _hosts(self, request: web.Request) -> web.Response:
        sort = request.query.get("sort", "queued")
        if sort not in SORTS:
            raise web.HTTPBadRequest(text=f"sort must be one of {', '.join(SORTS)}\n")
        try:
            n = int(request.query.get("n", "50"))
        except ValueError:
            raise web.HTTPBadRequest(text="n must be an integer\n") from None
        n = max(1, min(n, _MAX_N))
        return web.json_response({"sort": sort, "hosts": self._source.hosts(sort, n)})

    async def _history(self, request: web.Request) -> web.Response:
        self._source.latest()
        return web.json_response({"points": self._source.history.points()})

    async def _metrics(self, request: web.Request) -> web.Response:
        body = metrics_text(self._source.latest)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    async def _events(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            }
        )
        await response.prepare(request)
        await response.write(b"retry: 2000\n\n")
        last_at: float | None = None
        try:
            while not self._closing.is_set():
                latest = self._source.latest()
                if latest is not None and latest["at"] != last_at:
                    last_at = latest["at"]
                    data = self._json(latest)
                    await response.write(b"event: snapshot\ndata: " + data + b"\n\n")
                else:
                    await response.write(b": idle\n\n")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closing.wait(), self._sse_interval_s)
        except (ConnectionResetError, ConnectionError):
            pass
        return response


_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:"
)
"""The page loads nothing from elsewhere: its script and styles are inline."""
