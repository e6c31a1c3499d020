"""Records that cross the fetch seam."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["ConditionalFetcher", "FetchResult", "Fetcher"]


@dataclass(frozen=True, slots=True)
class FetchResult:
    """One HTTP exchange, redirects *not* followed.

    ``body`` is the payload after content-decoding (gzip/deflate/br), capped:
    ``truncated`` is true when the cap (or a broken connection) cut it short.
    ``raw_body`` is the bytes as they came off the wire (still content-encoded),
    for archiving; it may equal ``body``. ``headers`` keep order and duplicates,
    names as sent. Times are epoch seconds from the fetcher's clock:
    ``started_at`` when the request was sent, ``ended_at`` when the last byte
    was read (or the read was abandoned).

    ``decoded_too_large`` is true when decoding stopped at the decoded-size cap
    (``truncated`` is then true as well). ``decoding_failed`` is true when the
    content-coding was corrupt or unsupported: ``body`` then holds what decoded
    before the error, or the raw bytes when nothing decoded. ``ip`` is the
    address the request went to, ``request_headers`` the headers sent.
    ``interrupted`` is true when the connection broke mid-body (reset, closed
    before the announced length): the answer is not whole, and the crawl treats
    it as a failed attempt (see :mod:`courtly.frontier.retry`); ``truncated`` is
    then true as well. A cap or a timeout mid-body does not set it.
    """

    url: str
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    started_at: float
    ended_at: float
    truncated: bool = False
    raw_body: bytes | None = None
    http_version: str = "1.1"
    reason: str = ""
    ip: str | None = None
    request_headers: tuple[tuple[str, str], ...] = field(default=())
    decoded_too_large: bool = False
    decoding_failed: bool = False
    interrupted: bool = False

    @property
    def elapsed_s(self) -> float:
        """Wall time of the exchange, seconds."""
        return max(0.0, self.ended_at - self.started_at)

    def header(self, name: str) -> str | None:
        """The first header called ``name`` (case-insensitive), or ``None``."""
        lname = name.lower()
        for key, value in self.headers:
            if key.lower() == lname:
                return value
        return None


class Fetcher(Protocol):
    """Fetch one URL with one GET; raise :class:`courtly.errors.FetchError` if no response came.

    Implementations never follow redirects: a 3xx comes back as a result with a
    ``Location`` header, so the caller decides (the frontier for pages, the
    robots fetch policy for robots.txt).
    """

    async def fetch(self, url: str) -> FetchResult: ...


class ConditionalFetcher(Protocol):
    """A :class:`Fetcher` that can add request headers (conditional GET on recrawl).

    ``headers`` go out with the GET as given; ``None`` or empty is a plain fetch.
    """

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult: ...
