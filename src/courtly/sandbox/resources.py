"""What a sandbox URL is: the records :meth:`SandboxWorld.resolve` returns.

A resource says what to answer, before any per-request behaviour (slow
hosts, 429/503 windows) is applied by the server.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BigPage", "Document", "GzipBomb", "Hang", "Link", "Page", "Redirect", "Resource"]


@dataclass(frozen=True, slots=True)
class Link:
    """An ``<a>`` on a page: ``href`` as written, ``target`` the canonical absolute URL.

    ``target`` is ``None`` for links leaving the sandbox (``*.invalid`` hosts).
    """

    href: str
    target: str | None
    nofollow: bool = False
    text: str = ""


@dataclass(frozen=True, slots=True)
class Page:
    """An HTML page of about ``size_bytes``.

    ``meta_nofollow`` puts ``<meta name="robots" content="nofollow">`` in the page,
    ``header_nofollow`` sends ``X-Robots-Tag: nofollow``. ``trap`` marks pages of
    an infinite space (calendar, ever-deeper path, session ids).
    """

    title: str
    links: tuple[Link, ...]
    size_bytes: int
    meta_nofollow: bool = False
    header_nofollow: bool = False
    trap: bool = False


@dataclass(frozen=True, slots=True)
class Redirect:
    """A 3xx answer: ``location`` as sent (maybe relative), ``target`` the absolute URL."""

    status: int
    location: str
    target: str


@dataclass(frozen=True, slots=True)
class Document:
    """A fixed body: robots.txt, a sitemap, a 404 or a 5xx."""

    status: int
    content_type: str
    body: bytes


@dataclass(frozen=True, slots=True)
class BigPage:
    """An HTML page of ``size_bytes`` streamed in chunks."""

    size_bytes: int


@dataclass(frozen=True, slots=True)
class GzipBomb:
    """A small gzip body, sent with ``Content-Encoding: gzip``, inflating to ``inflated_bytes``."""

    inflated_bytes: int


@dataclass(frozen=True, slots=True)
class Hang:
    """No answer: hold the connection ``hang_s`` seconds, then drop it."""

    hang_s: float


Resource = Page | Redirect | Document | BigPage | GzipBomb | Hang
