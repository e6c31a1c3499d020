"""The authority a robots.txt governs: ``(scheme, host, port)`` (RFC 9309 §2.3)."""

from __future__ import annotations

import re

from yarl import URL

from courtly.errors import InvalidURL
from courtly.url.host import canonical_authority

__all__ = ["Authority", "authority_of", "robots_url_for"]

Authority = tuple[str, str, int]
"""``(scheme, host, port)``: scheme and host lower-case (host in ASCII/IDNA form), port explicit."""

_SCHEMES = frozenset({"http", "https"})
_PLAIN_HOST = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*").fullmatch


def authority_of(url: str) -> Authority:
    """The ``(scheme, host, port)`` of an http(s) URL; raises :class:`InvalidURL` otherwise.

    The default port is filled in, so ``http://a/`` and ``http://a:80/`` share one robots.txt.
    A canonical URL with a plain ASCII host name (the crawl's) is read by slicing; anything
    else is parsed by yarl.
    """
    authority = canonical_authority(url)
    if authority is not None:
        host, _, port_text = authority.partition(":")
        port = int(port_text) if port_text else (80 if url[4] == ":" else 443)
        if port <= 65_535 and _PLAIN_HOST(host) is not None:
            return ("http" if url[4] == ":" else "https"), host, port
    return _authority_by_yarl(url)


def _authority_by_yarl(url: str) -> Authority:
    try:
        parsed = URL(url)
        scheme = parsed.scheme.lower()
        host = parsed.raw_host
        port = parsed.port
    except (ValueError, TypeError, UnicodeError) as error:
        raise InvalidURL(f"not a URL: {url!r} ({error})") from error
    if scheme not in _SCHEMES or not host or port is None:
        raise InvalidURL(f"not an http(s) URL with a host: {url!r}")
    return scheme, host.lower().rstrip("."), port


def robots_url_for(url_or_authority: str | Authority) -> str:
    """The ``/robots.txt`` URL for a page URL or an authority (default port omitted)."""
    if isinstance(url_or_authority, str):
        scheme, host, port = authority_of(url_or_authority)
    else:
        scheme, host, port = url_or_authority
    return str(URL.build(scheme=scheme, host=host, port=port, path="/robots.txt"))
