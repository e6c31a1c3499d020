"""The robots.txt fetch policy (RFC 9309 §2.3, with Google's documented practice).

:func:`fetch_robots` performs one logical robots.txt fetch over a
:class:`~courtly.fetch.records.Fetcher` (which never follows redirects) and
classifies it:

===================================================  ===============  ======================
what happened                                        ``kind``         the crawler may
===================================================  ===============  ======================
2xx, body complete (or cut only by the size limit)   ``ok``           obey the parsed rules
3xx with ``Location``                                (followed)       \u2014
more than ``max_redirects`` redirects, a loop,       ``unavailable``  fetch anything
a 3xx without a usable ``Location``
4xx other than 429                                   ``unavailable``  fetch anything
429, 5xx, other statuses                             ``unreachable``  fetch nothing
no response (:class:`~courtly.errors.FetchError`:    ``unreachable``  fetch nothing
timeout, connect, DNS...)
2xx whose body broke off before ``max_bytes``        ``unreachable``  fetch nothing
(``truncated`` and shorter than the limit)
===================================================  ===============  ======================

Redirects are followed across hosts; relative ``Location`` values are
resolved against the URL that returned them; the rules apply to the
authority of the *original* URL. A 2xx body longer than ``max_bytes`` is not
an error: its first ``max_bytes`` are parsed (the fetcher may mark it
``truncated`` because it stopped reading there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from yarl import URL

from courtly.errors import FetchError
from courtly.fetch.records import Fetcher, FetchResult
from courtly.frontier.politeness import parse_retry_after
from courtly.robots.parse import PARSE_LIMIT_BYTES, parse
from courtly.robots.rules import RobotsRules

__all__ = ["RobotsFetchKind", "RobotsFetchOutcome", "fetch_robots"]

RobotsFetchKind = Literal["ok", "unavailable", "unreachable"]

_SCHEMES = frozenset({"http", "https"})


@dataclass(frozen=True, slots=True)
class RobotsFetchOutcome:
    """The result of one logical robots.txt fetch, redirects included.

    ``rules`` is set only for ``kind == "ok"``. ``status`` is the last HTTP
    status seen (``None`` if the last attempt got no response). ``final_url``
    is the last URL requested; ``hops`` the redirects followed; ``error`` a
    short human reason for anything but ``ok``. ``results`` holds every HTTP
    exchange in order, for archiving. ``error_kind`` is the
    :class:`~courtly.errors.FetchError` kind when the last attempt got no response
    (e.g. ``"blocked"`` by the address guard, ``"connect"``, ``"dns"``).
    """

    kind: RobotsFetchKind
    rules: RobotsRules | None
    status: int | None
    final_url: str
    hops: int
    error: str | None
    results: tuple[FetchResult, ...] = ()
    error_kind: str | None = None

    def effective_rules(self) -> RobotsRules:
        """The rules to obey: the parsed ones, allow-all (unavailable) or disallow-all."""
        if self.rules is not None:
            return self.rules
        if self.kind == "unavailable":
            return RobotsRules.allow_all()
        return RobotsRules.disallow_all()

    def retry_after_s(self, now_at: float) -> float | None:
        """Seconds asked for by a ``Retry-After`` on the last response (delta or HTTP date)."""
        if not self.results:
            return None
        return parse_retry_after(self.results[-1].header("Retry-After"), now_at)


def _next_url(current_url: str, location: str) -> str | None:
    try:
        target = URL(current_url).join(URL(location.strip())).with_fragment(None)
    except (ValueError, TypeError, UnicodeError):
        return None
    if target.scheme not in _SCHEMES or not target.raw_host:
        return None
    return str(target)


async def fetch_robots(
    fetcher: Fetcher,
    robots_url: str,
    *,
    max_redirects: int = 5,
    max_bytes: int = PARSE_LIMIT_BYTES,
) -> RobotsFetchOutcome:
    """Fetch ``robots_url`` following up to ``max_redirects`` redirects; see the module doc.

    Never raises :class:`~courtly.errors.FetchError`: a failed exchange
    becomes an ``unreachable`` outcome. Parses at most ``max_bytes`` bytes.
    """
    url = robots_url
    results: list[FetchResult] = []
    visited = {url}
    hops = 0
    while True:
        try:
            result = await fetcher.fetch(url)
        except FetchError as error:
            failure = f"{error.kind}: {error}"
            return RobotsFetchOutcome(
                "unreachable", None, None, url, hops, failure, tuple(results), error.kind
            )
        results.append(result)
        step = _classify(result, url, max_bytes=max_bytes)
        if isinstance(step, tuple):
            kind, why, rules = step
            return RobotsFetchOutcome(kind, rules, result.status, url, hops, why, tuple(results))
        reason: str | None = None
        if hops >= max_redirects:
            reason = f"more than {max_redirects} redirects"
        elif step in visited:
            reason = f"redirect loop at {step}"
        if reason is not None:
            return RobotsFetchOutcome(
                "unavailable", None, result.status, url, hops, reason, tuple(results)
            )
        visited.add(step)
        hops += 1
        url = step


def _classify(
    result: FetchResult, url: str, *, max_bytes: int
) -> str | tuple[RobotsFetchKind, str | None, RobotsRules | None]:
    """The redirect target of one response, or its final ``(kind, error, rules)``."""
    status = result.status
    if 200 <= status < 300:
        if result.truncated and len(result.body) < max_bytes:
            return "unreachable", f"body broke off after {len(result.body)} bytes", None
        return "ok", None, parse(result.body, limit_bytes=max_bytes)
    if 300 <= status < 400:
        location = result.header("Location")
        if not location:
            return "unavailable", f"HTTP {status} without Location", None
        target = _next_url(url, location)
        if target is None:
            return "unavailable", f"unusable Location {location!r}", None
        return target
    if 400 <= status < 500 and status != 429:
        return "unavailable", f"HTTP {status}", None
    return "unreachable", f"HTTP {status}", None
