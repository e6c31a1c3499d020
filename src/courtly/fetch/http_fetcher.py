"""The production fetcher: aiohttp over a pinned, guarded, per-IP-capped connection pool.

One request goes through these steps:

1. Reject a URL longer than ``max_url_length`` (``too_long_url``) or not http(s) (``protocol``).
2. Resolve the host through the :class:`~courtly.fetch.dns.DnsCache` and take the first
   address the guard allows (``dns`` / ``blocked`` otherwise). While requests to a host
   are in flight it stays *pinned* to that address.
3. Wait for the per-IP semaphore (``per_ip_concurrency`` requests per address).
4. Send one GET (no redirects followed, never retried) over a keep-alive connection; a
   new connection asks :class:`~courtly.fetch.pinning.PinnedResolver`, which answers
   with the pinned IP.
5. Read the body up to ``max_body_bytes``, decoding gzip/deflate/br on the fly up to
   ``max_decoded_bytes``; past either cap reading stops and the connection is closed.

A whole response's ``ended_at`` is when its last bytes reached the connection (the
protocol's ``data_received``, as the loop delivered them), not when the fetch task got
round to reading them: on a busy loop that is a turn or more later, and the politeness
gap counts from ``ended_at``. Both are after the server sent its last byte.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping
from types import TracebackType

import aiohttp
from aiohttp import ClientTimeout, DummyCookieJar, TCPConnector
from aiohttp.client_proto import ResponseHandler
from multidict import CIMultiDictProxy
from yarl import URL

from courtly.clock import Clock, SystemClock
from courtly.errors import BlockedAddress, FetchError
from courtly.fetch.config import FetchConfig
from courtly.fetch.deadline import check_not_after
from courtly.fetch.decoding import BodyDecoder, parse_content_encoding
from courtly.fetch.dns import DnsCache, ResolverFn, getaddrinfo_addresses
from courtly.fetch.guard import is_blocked_address
from courtly.fetch.hosts import load_hosts_file, normalise_host_name
from courtly.fetch.ip_gate import IpGate
from courtly.fetch.pinning import PinnedResolver
from courtly.fetch.records import Fetcher, FetchResult

__all__ = ["ACCEPT_ENCODING", "HttpFetcher"]

ACCEPT_ENCODING = "gzip, deflate, br"
_SCHEMES = frozenset({"http", "https"})
_PICK_MEMO_MAX = 65_536


class _Pin:
    """The address a host is pinned to while ``users`` requests to it are in flight."""

    __slots__ = ("ip", "users")

    def __init__(self, ip: str) -> None:
        self.ip = ip
        self.users = 0


class _StampedHandler(ResponseHandler):
    """aiohttp's connection protocol, noting on the fetcher's clock when bytes last arrived
    (``received_at``): as the loop hands them to the connection, before any task reads
    them. A response read to its end was whole by then, and the server had sent it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, now: Callable[[], float]) -> None:
        super().__init__(loop)
        self._now = now
        self.received_at = float("-inf")

    def data_received(self, data: bytes) -> None:
        self.received_at = self._now()
        super().data_received(data)


def _stamp_arrivals(connector: TCPConnector, now: Callable[[], float]) -> None:
    """Make ``connector``'s new connections :class:`_StampedHandler`. aiohttp has no
    public switch for the protocol class: its connector builds each one from
    ``_factory`` (a ``functools.partial`` of ``ResponseHandler`` bound to the loop).
    Left as it is if that ever changes: ``ended_at`` is then the read's own time."""
    factory = getattr(connector, "_factory", None)
    if isinstance(factory, functools.partial) and factory.func is ResponseHandler:
        loop = factory.keywords.get("loop")
        if isinstance(loop, asyncio.AbstractEventLoop):
            stamped = functools.partial(_StampedHandler, loop=loop, now=now)
            connector._factory = stamped  # type: ignore[assignment]


def _received_at(response: aiohttp.ClientResponse) -> float | None:
    """When the last bytes of ``response`` reached its connection (see
    :class:`_StampedHandler`), or ``None`` if its connection does not say."""
    protocol = getattr(response, "_protocol", None)  # kept by aiohttp after release
    return protocol.received_at if isinstance(protocol, _StampedHandler) else None


class _IpSlot:
    """The per-IP semaphore, the number of requests holding or awaiting it, and the
    number of those that found it taken and wait for it."""

    __slots__ = ("semaphore", "users", "waiting")

    def __init__(self, limit: int) -> None:
        self.semaphore = asyncio.Semaphore(limit)
        self.users = 0
        self.waiting = 0


class HttpFetcher:
    """Fetch URLs over HTTP(S) with aiohttp; implements :class:`~courtly.fetch.Fetcher`.

    Use as ``async with HttpFetcher(config, clock) as fetcher:`` (or call
    :meth:`aclose`). ``clock`` stamps ``started_at``/``ended_at`` (epoch seconds) and
    ages the DNS cache; timeouts themselves run on the event loop's clock.
    ``resolver_fn`` and ``dns_overrides`` replace the system resolver and extend the
    hosts file (tests and benchmarks map names to loopback addresses with them);
    ``guard`` replaces :func:`~courtly.fetch.is_blocked_address` (tests only).
    ``ip_gate`` (a crawl shared by several processes) is asked for a slot of the
    address as well, inside the local per-IP semaphore. ``on_ip_wait`` is called
    each time a fetch must wait for a slot of its address (the address is at its
    cap); :attr:`waiting_for_ip` counts the fetches waiting so: a caller that bounds
    its requests in flight can leave those out, since they hold no connection and
    use no CPU while another host may be ready.

    :meth:`fetch` returns a :class:`~courtly.fetch.FetchResult` for every HTTP
    response, whatever its status, and raises :class:`~courtly.errors.FetchError`
    when there is none: ``too_long_url``, ``protocol`` (bad URL or scheme, malformed
    or dropped response head), ``dns``, ``blocked`` (:class:`BlockedAddress`),
    ``connect`` (refused, unreachable, TLS failure), ``timeout`` (connect or total,
    before the response head) or ``lease_expired`` (the task's deadline passed before the
    request could start: :mod:`courtly.fetch.deadline`; nothing was sent). A body cut
    short by a cap, a timeout or a dropped connection comes back with ``truncated=True``
    (and ``interrupted=True`` for a dropped connection).
    """

    def __init__(
        self,
        config: FetchConfig | None = None,
        clock: Clock | None = None,
        *,
        resolver_fn: ResolverFn = getaddrinfo_addresses,
        dns_overrides: dict[str, list[str]] | None = None,
        guard: Callable[[str], str | None] = is_blocked_address,
        ip_gate: IpGate | None = None,
        on_ip_wait: Callable[[], None] | None = None,
    ) -> None:
        self.config = config = config if config is not None else FetchConfig()
        self._on_ip_wait = on_ip_wait
        self.waiting_for_ip = 0
        """Fetches now waiting for a slot of their address (not yet sending)."""
        self._clock: Clock = clock if clock is not None else SystemClock()
        overrides: dict[str, list[str]] = {}
        if config.hosts_file is not None:
            overrides.update(load_hosts_file(config.hosts_file))
        if dns_overrides:
            overrides.update({normalise_host_name(k): list(v) for k, v in dns_overrides.items()})
        self.dns = DnsCache(
            self._clock,
            config.dns_ttl_s,
            resolver_fn,
            overrides,
            negative_ttl_s=config.dns_negative_ttl_s,
            timeout_s=config.connect_timeout_s,
        )
        self._guard = guard
        self._ip_gate = ip_gate
        self._session: aiohttp.ClientSession | None = None
        self._closed = False
        self._pins: dict[str, _Pin] = {}
        self._slots: dict[str, _IpSlot] = {}
        # host -> (the DNS answer it was computed from, the address picked from it)
        self._picks: dict[str, tuple[tuple[str, ...], str]] = {}
        self._versions: dict[tuple[int, int], str] = {}

    # -- lifecycle -------------------------------------------------------------------

    async def __aenter__(self) -> HttpFetcher:
        self._open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every connection and cancel DNS lookups in flight; idempotent."""
        self._closed = True
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        await self.dns.aclose()

    def _open(self) -> aiohttp.ClientSession:
        if self._closed:
            raise RuntimeError("HttpFetcher is closed")
        session = self._session
        if session is None:
            config = self.config
            keepalive = config.keepalive_timeout_s
            connector = TCPConnector(
                limit=0,
                limit_per_host=config.per_ip_concurrency,
                use_dns_cache=False,
                resolver=PinnedResolver(self._address_for),
                keepalive_timeout=keepalive if keepalive > 0 else None,
                force_close=keepalive <= 0,
                ssl=config.verify_tls,  # True: the default context, which checks
            )
            _stamp_arrivals(connector, self._clock.now)
            session = self._session = aiohttp.ClientSession(
                connector=connector,
                headers={"User-Agent": config.user_agent, "Accept-Encoding": ACCEPT_ENCODING},
                timeout=ClientTimeout(
                    total=config.total_timeout_s, sock_connect=config.connect_timeout_s
                ),
                auto_decompress=False,
                cookie_jar=DummyCookieJar(),
                trust_env=False,
            )
            # No transparent retry. aiohttp sends an idempotent request (GET) a second
            # time, at once and on a new connection, when the first attempt fails with
            # ClientOSError or ServerDisconnectedError before the response head
            # (ClientSession._request, "retry_persistent_connection"; any connection,
            # fresh or reused). That second request would bypass the frontier's lease
            # and its politeness gap, so a failed exchange is reported instead and the
            # frontier decides when to ask again. There is no public switch; aiohttp's
            # own test client turns it off the same way.
            session._retry_connection = False
        return session

    # -- addresses -------------------------------------------------------------------

    async def resolve(self, host: str) -> str:
        """The address a request to ``host`` would go to now.

        The first resolved address the guard allows (all of them when
        ``allow_private_networks``). Raises ``FetchError("dns")`` or
        :class:`BlockedAddress` when every address is refused. This is the address
        the per-IP cap counts, so the frontier's ``ip`` host-key mode can use it.
        """
        key = normalise_host_name(host)
        addresses = await self.dns.resolve(key)
        if self.config.allow_private_networks:
            return addresses[0]
        memo = self._picks.get(key)
        if memo is not None and memo[0] is addresses:
            return memo[1]
        refused = []
        for address in addresses:
            reason = self._guard(address)
            if reason is None:
                if len(self._picks) >= _PICK_MEMO_MAX:
                    self._picks.clear()
                self._picks[key] = (addresses, address)
                return address
            refused.append(f"{address} ({reason})")
        raise BlockedAddress(f"{key}: every address is blocked: {', '.join(refused)}")

    def known_address(self, host: str) -> str | None:
        """The address a request to ``host`` would go to, if known without a lookup
        (a request in flight pins it, or the DNS cache holds a live answer); else
        ``None``. Never resolves, never raises."""
        key = normalise_host_name(host)
        pin = self._pins.get(key)
        if pin is not None:
            return pin.ip
        addresses = self.dns.cached(key)
        if not addresses:
            return None
        if self.config.allow_private_networks:
            return addresses[0]
        memo = self._picks.get(key)
        if memo is not None and memo[0] is addresses:
            return memo[1]
        return None

    def waiting_at(self, ip: str) -> int:
        """Requests now waiting for a slot of ``ip`` (the per-IP cap; not yet sending):
        the part of :attr:`waiting_for_ip` at that address."""
        slot = self._slots.get(ip)
        return 0 if slot is None else slot.waiting

    async def _address_for(self, host: str) -> str:
        pin = self._pins.get(normalise_host_name(host))
        if pin is not None:
            return pin.ip
        return await self.resolve(host)

    # -- fetching --------------------------------------------------------------------

    def limited(self, total_timeout_s: float) -> Fetcher:
        """This fetcher (its connections, DNS cache and per-IP slots) with every exchange
        limited to ``total_timeout_s`` instead of ``config.total_timeout_s``. The time
        spent waiting for a per-IP slot does not count: only the exchange itself."""
        return _Limited(self, total_timeout_s)

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        """One GET of ``url``; see the class docstring for results and errors.

        ``headers`` are added to the request as given (a conditional GET's
        ``If-None-Match`` / ``If-Modified-Since``, :mod:`courtly.fetch.validators`);
        they show in the result's ``request_headers``.
        """
        return await self._fetch(url, None, headers)

    async def _fetch(
        self, url: str, total_timeout_s: float | None, headers: Mapping[str, str] | None = None
    ) -> FetchResult:
        config = self.config
        if len(url) > config.max_url_length:
            raise FetchError(
                "too_long_url", f"URL of {len(url)} characters (max {config.max_url_length})"
            )
        try:
            target = URL(url)
        except (ValueError, TypeError) as exc:
            raise FetchError("protocol", f"unparseable URL {url!r}: {exc}") from None
        host = target.raw_host
        if target.scheme not in _SCHEMES or not host:
            raise FetchError("protocol", f"not an http(s) URL with a host: {url!r}")
        session = self._session or self._open()

        key = normalise_host_name(host)
        pins = self._pins
        pin = pins.get(key)
        if pin is None:
            ip = await self.resolve(key)
            pin = pins.get(key)  # another request may have pinned it meanwhile
            if pin is None:
                pin = pins[key] = _Pin(ip)
        pin.users += 1
        ip = pin.ip
        slots = self._slots
        slot = slots.get(ip)
        if slot is None:
            slot = slots[ip] = _IpSlot(config.per_ip_concurrency)
        slot.users += 1
        try:
            semaphore = slot.semaphore
            if semaphore.locked():  # the address is at its cap: wait for a slot
                self.waiting_for_ip += 1
                slot.waiting += 1
                try:
                    if self._on_ip_wait is not None:
                        self._on_ip_wait()
                    await semaphore.acquire()
                finally:
                    self.waiting_for_ip -= 1
                    slot.waiting -= 1
            else:
                await semaphore.acquire()
            try:
                if self._ip_gate is None:
                    check_not_after(self._clock)
                    return await self._exchange(session, url, target, ip, total_timeout_s, headers)
                async with self._ip_gate.hold(ip):
                    check_not_after(self._clock)
                    return await self._exchange(session, url, target, ip, total_timeout_s, headers)
            finally:
                semaphore.release()
        finally:
            slot.users -= 1
            if not slot.users:
                del slots[ip]
            pin.users -= 1
            if not pin.users:
                del pins[key]

    async def _exchange(
        self,
        session: aiohttp.ClientSession,
        url: str,
        target: URL,
        ip: str,
        total_timeout_s: float | None,
        extra: Mapping[str, str] | None = None,
    ) -> FetchResult:
        clock = self._clock
        started_at = clock.now()
        try:
            if total_timeout_s is None:
                response = await session.get(target, allow_redirects=False, headers=extra)
            else:
                timeout = ClientTimeout(
                    total=total_timeout_s, sock_connect=self.config.connect_timeout_s
                )
                response = await session.get(
                    target, allow_redirects=False, timeout=timeout, headers=extra
                )
        except FetchError:
            raise
        except Exception as exc:
            await _connection_closed()  # aiohttp closed it: let the socket go first
            raise _map_error(exc, url) from exc
        try:
            headers: CIMultiDictProxy[str] = response.headers
            codings = parse_content_encoding(headers.get("Content-Encoding"))
            raw, truncated, interrupted, decoder = await self._read_body(response, codings)
            if truncated:
                response.close()  # drop the connection: the rest of the body is unread
                await _connection_closed()
            ended_at = clock.now()
            if not truncated:
                # read to its end: when its last bytes arrived (see _StampedHandler)
                arrived = _received_at(response)
                if arrived is not None and started_at <= arrived < ended_at:
                    ended_at = arrived
            http_version = self._http_version(response.version)
            if decoder is None:
                body = raw
                too_large = failed = False
            else:
                body = decoder.body()
                too_large = decoder.too_large
                failed = decoder.failed
                if failed and not body:
                    body = raw  # nothing decoded (corrupt or unsupported coding)
            return FetchResult(
                url=url,
                status=response.status,
                headers=tuple(headers.items()),
                body=body,
                started_at=started_at,
                ended_at=ended_at,
                truncated=truncated,
                interrupted=interrupted,
                raw_body=raw,
                http_version=http_version,
                reason=response.reason or "",
                ip=ip,
                request_headers=tuple(response.request_info.headers.items()),
                decoded_too_large=too_large,
                decoding_failed=failed,
            )
        finally:
            response.release()

    def _http_version(self, version: tuple[int, int] | None) -> str:
        if version is None:
            return "1.1"
        text = self._versions.get(version)
        if text is None:
            text = self._versions[version] = f"{version[0]}.{version[1]}"
        return text

    async def _read_body(
        self, response: aiohttp.ClientResponse, codings: tuple[str, ...]
    ) -> tuple[bytes, bool, bool, BodyDecoder | None]:
        """Read the wire body up to the cap: (raw bytes, truncated, interrupted, decoder
        or None).

        Stops early when the wire cap or the decoded cap is reached, or when the
        connection fails or times out mid-body; ``truncated`` is then true, and
        ``interrupted`` too when the connection failed (not for a cap or a timeout).
        A decoding error stops decoding, not reading, so the raw body stays whole.
        """
        cap = self.config.max_body_bytes
        decoder = BodyDecoder(codings, self.config.max_decoded_bytes) if codings else None
        content = response.content
        chunks: list[bytes] = []
        size = 0
        truncated = interrupted = False
        try:
            while True:
                chunk = await content.readany()
                if not chunk:
                    break
                if len(chunk) > cap - size:
                    # Only reached when more bytes arrive than fit: a body of exactly
                    # ``cap`` bytes ends with an empty read instead.
                    chunk = chunk[: cap - size]
                    truncated = True
                    if not chunk:
                        break
                size += len(chunk)
                chunks.append(chunk)
                if decoder is not None and not decoder.feed(chunk) and decoder.too_large:
                    truncated = True
                if truncated:
                    break
        except aiohttp.ClientError:
            truncated = interrupted = True
        except TimeoutError:
            truncated = True
        raw = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        return raw, truncated, interrupted, decoder


async def _connection_closed() -> None:
    """Return once a connection closed in this step has really closed its socket.

    ``transport.close()`` (aiohttp calls it on a timeout, an error or a dropped body)
    only schedules the socket's close for the next loop iteration, with ``call_soon``,
    in asyncio and uvloop alike; a fetch that gave its per-IP slot back at once would
    let another request to the address start while this connection is still open
    (the cap broken by one connection, for one iteration, or longer on a busy loop).
    One yield runs that callback first: the ready queue is first in, first out.
    """
    await asyncio.sleep(0)


def _map_error(exc: Exception, url: str) -> FetchError:
    """Turn an aiohttp (or OS) exception raised before the response head into a FetchError."""
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return FetchError("dns", f"{url}: {exc}")
    if isinstance(exc, TimeoutError):
        phase = "connect" if isinstance(exc, aiohttp.ConnectionTimeoutError) else "total"
        return FetchError("timeout", f"{url}: {phase} timeout")
    if isinstance(exc, aiohttp.ClientConnectorError):
        return FetchError("connect", f"{url}: {exc}")
    if isinstance(exc, aiohttp.ClientOSError | ConnectionError):
        return FetchError("connect", f"{url}: {exc}")
    if isinstance(exc, aiohttp.ClientError | ValueError):
        return FetchError("protocol", f"{url}: {type(exc).__name__}: {exc}")
    if isinstance(exc, OSError):
        return FetchError("connect", f"{url}: {exc}")
    raise exc


class _Limited:
    """:meth:`HttpFetcher.limited`: the same fetcher with a shorter total timeout."""

    __slots__ = ("_inner", "_timeout_s")

    def __init__(self, inner: HttpFetcher, total_timeout_s: float) -> None:
        self._inner = inner
        self._timeout_s = total_timeout_s

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        return await self._inner._fetch(url, self._timeout_s, headers)
