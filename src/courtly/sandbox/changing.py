"""Pages that change on a schedule, with honest or lying validators (the change simulator).

A :class:`ChangingSite` answers ``GET`` by the clock it is given: page ``p`` is at version
``floor((now - start) / period)``, so its change times are known exactly. Each page has a
validator behaviour (:data:`BEHAVIOURS`):

* ``honest`` — a strong ETag and a Last-Modified per version; 304 when either matches;
* ``none`` — no validators, so every visit is a full 200;
* ``etag_per_response`` — a new ETag on every response, same bytes (a fleet of backends);
* ``lm_now`` — Last-Modified is always "now", no ETag;
* ``lying_304`` — ETag fixed forever and a 304 for it even after the content changed;
* ``clock_footer`` — no validators and a footer clock that changes every second: the
  bytes change on every fetch, the main text only per version;
* ``hub`` — a news hub with honest validators: version ``n`` publishes article
  ``<path>/<n>`` (an honest page that never changes) and the hub links the latest
  :data:`HUB_LINKS` articles, so each new article's publication time is known
  (:meth:`ChangingSite.changed_at`) and its fetch lag can be audited.

Every request is appended to :attr:`ChangingSite.log` (time, URL, request headers,
status), which the tests audit: politeness gaps, the 304 share, refetch lags. Calling
the site with ``(url, headers)`` makes it a ``MemoryFetcher`` ``conditional`` handler
(it then answers ``/robots.txt`` with 404 and ``/`` with links to every page); the
sandbox HTTP server serves it on one of its hosts (``SandboxServer(changing=...)``)
through :meth:`ChangingSite.answer`, by the server's clock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from urllib.parse import urlsplit

from courtly.clock import Clock

__all__ = [
    "BEHAVIOURS",
    "HUB_LINKS",
    "ChangingPage",
    "ChangingSite",
    "SiteRequest",
    "watch_pages",
]

BEHAVIOURS = (
    "honest", "none", "etag_per_response", "lm_now", "lying_304", "clock_footer", "hub",
)  # fmt: skip
HUB_LINKS = 5


@dataclass(frozen=True, slots=True)
class ChangingPage:
    """A page at ``path`` whose content changes every ``period_s`` seconds."""

    path: str
    period_s: float
    behaviour: str = "honest"

    def __post_init__(self) -> None:
        if self.behaviour not in BEHAVIOURS:
            raise ValueError(f"unknown behaviour {self.behaviour!r}")
        if self.period_s <= 0:
            raise ValueError("a page's change period must be positive")


@dataclass(frozen=True, slots=True)
class SiteRequest:
    """One request the site answered (``at`` on its clock)."""

    at: float
    url: str
    headers: Mapping[str, str]
    status: int


@dataclass
class ChangingSite:
    """Pages changing on ``clock``, versions counted from ``start_at``."""

    pages: tuple[ChangingPage, ...]
    clock: Clock
    start_at: float = 0.0
    log: list[SiteRequest] = field(default_factory=list)
    _served: int = 0

    def version(self, page: ChangingPage, at: float) -> int:
        return math.floor(max(0.0, at - self.start_at) / page.period_s)

    def changed_at(self, page: ChangingPage, version: int) -> float:
        """When ``page`` reached ``version``."""
        return self.start_at + version * page.period_s

    def __call__(
        self, url: str, headers: Mapping[str, str]
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        now = self.clock.now()
        path = urlsplit(url).path or "/"
        date = formatdate(now, usegmt=True)
        if path == "/robots.txt" or (path != "/" and self.page(path) is None):
            reply: tuple[int, list[tuple[str, str]], bytes] = (404, [("Date", date)], b"")
        elif path == "/":
            links = "".join(f'<a href="{p.path}">{p.path}</a>' for p in self.pages)
            body = f"<html><body><main>index {links}</main></body></html>".encode()
            reply = (200, [("Content-Type", "text/html"), ("Date", date)], body)
        else:
            return self.answer(path, headers, url)
        self.log.append(SiteRequest(now, url, dict(headers), reply[0]))
        return reply

    def page(self, path: str) -> ChangingPage | None:
        """The page at ``path``, if it is one of this site's (a hub's article once it is
        published: a page that never changes)."""
        found = next((p for p in self.pages if p.path == path), None)
        if found is not None:
            return found
        hub_path, _, number = path.rpartition("/")
        hub = next((p for p in self.pages if p.path == hub_path and p.behaviour == "hub"), None)
        if hub is None or not number.isdigit():
            return None
        if int(number) > self.version(hub, self.clock.now()):
            return None
        return ChangingPage(path, 1e12)  # never changes

    def article(self, url: str) -> tuple[ChangingPage, int] | None:
        """The hub and number of an article URL of this site, if it is one."""
        hub_path, _, number = (urlsplit(url).path or "/").rpartition("/")
        hub = next((p for p in self.pages if p.path == hub_path and p.behaviour == "hub"), None)
        return (hub, int(number)) if hub is not None and number.isdigit() else None

    def answer(
        self, path: str, headers: Mapping[str, str], url: str | None = None
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """Answer a GET of page ``path`` with request ``headers`` (logged as ``url``)."""
        now = self.clock.now()
        page = self.page(path)
        if page is None:
            raise KeyError(path)
        reply = self._answer(page, dict(headers), now)
        self.log.append(SiteRequest(now, url or path, dict(headers), reply[0]))
        return reply

    def _answer(
        self, page: ChangingPage, headers: dict[str, str], now: float
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        date = formatdate(now, usegmt=True)
        version = self.version(page, now)
        self._served += 1
        etag, modified = (
            f'"{page.path}-{version}"',
            formatdate(self.changed_at(page, version), usegmt=True),
        )
        out: list[tuple[str, str]] = [("Content-Type", "text/html"), ("Date", date)]
        behaviour = page.behaviour
        if behaviour == "honest":
            out += [("ETag", etag), ("Last-Modified", modified)]
            if headers.get("If-None-Match") == etag or (
                "If-None-Match" not in headers and headers.get("If-Modified-Since") == modified
            ):
                return 304, out, b""
        elif behaviour == "etag_per_response":
            out.append(("ETag", f'"r{self._served}"'))
        elif behaviour == "lm_now":
            out.append(("Last-Modified", date))
        elif behaviour == "lying_304":
            out.append(("ETag", '"forever"'))
            if headers.get("If-None-Match") == '"forever"':
                return 304, out, b""
        if behaviour == "hub":
            out += [("ETag", etag), ("Last-Modified", modified)]
            if headers.get("If-None-Match") == etag or (
                "If-None-Match" not in headers and headers.get("If-Modified-Since") == modified
            ):
                return 304, out, b""
        footer = f"<footer>now {now:.3f}</footer>" if behaviour == "clock_footer" else ""
        links = ""
        if behaviour == "hub":
            latest = range(version, max(-1, version - HUB_LINKS), -1)
            links = "".join(f'<a href="{page.path}/{n}">article {n}</a>' for n in latest)
        body = (
            f"<html><body><main><h1>{page.path}</h1><p>version {version}</p>{links}</main>"
            f"{footer}</body></html>"
        ).encode()
        return 200, out, body


def watch_pages(news_period_s: float = 10.0) -> tuple[ChangingPage, ...]:
    """The pages ``courtly sandbox serve --changing`` serves under ``/watch/``, quick
    enough to watch by hand: a news hub publishing an article every ``news_period_s``
    seconds, a price page changing every 30 s, a policy page every 2 minutes, a page that
    never changes, and one page per lying or validator-less behaviour, changing every
    minute (so that a lie can be caught)."""
    return (
        ChangingPage("/watch/hub", news_period_s, "hub"),
        ChangingPage("/watch/prices", 30.0),
        ChangingPage("/watch/policy", 120.0),
        ChangingPage("/watch/still", 1e9),
        ChangingPage("/watch/plain", 60.0, "none"),
        ChangingPage("/watch/tags", 60.0, "etag_per_response"),
        ChangingPage("/watch/now", 60.0, "lm_now"),
        ChangingPage("/watch/liar", 60.0, "lying_304"),
        ChangingPage("/watch/clock", 60.0, "clock_footer"),
    )
