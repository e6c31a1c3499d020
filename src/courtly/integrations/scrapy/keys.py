"""Frontier keys for Scrapy requests: which host queue, which dedup identity.

A request enters the frontier as a :class:`~courtly.frontier.QueuedUrl` whose
``url`` is a *key*: the origin of the request's URL (``scheme://host[:port]/``,
which picks the host queue, ``host[:port]``) with a fragment naming the
request: ``#courtly:<fingerprint hex>`` for a filtered request, so the store's
seen-set deduplicates by the crawler's request fingerprint, also across runs,
or ``#courtly:<fingerprint hex>:<nonce>`` for a ``dont_filter`` one, which is
never a duplicate. The fragment (without ``courtly:``) also names the stored
request (:data:`PAYLOAD_NAMESPACE`).
"""

from __future__ import annotations

import secrets
from typing import Final

from courtly.errors import InvalidURL
from courtly.robots import authority_of

__all__ = [
    "PAYLOAD_NAMESPACE",
    "key_for",
    "level_for_priority",
    "payload_id_of",
]

PAYLOAD_NAMESPACE: Final = "scrapy-request"
"""The blob namespace that holds serialised requests, one per payload id."""
_MARK: Final = "#courtly:"
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def key_for(url: str, fingerprint: bytes, *, dont_filter: bool) -> str:
    """The frontier key of a request to ``url``; raises :class:`InvalidURL` for a URL
    that is not http(s) with a host (such requests bypass the frontier)."""
    scheme, host, port = authority_of(url)
    if ":" in host:
        host = f"[{host}]"
    suffix = "" if _DEFAULT_PORTS[scheme] == port else f":{port}"
    origin = f"{scheme}://{host}{suffix}/"
    ident = fingerprint.hex()
    if dont_filter:
        ident = f"{ident}:{secrets.token_hex(8)}"
    return f"{origin}{_MARK}{ident}"


def payload_id_of(key: str) -> str:
    """The payload id inside a key made by :func:`key_for`."""
    _, mark, ident = key.rpartition(_MARK)
    if not mark or not ident:
        raise InvalidURL(f"not a courtly request key: {key[:100]!r}")
    return ident


def level_for_priority(priority: int, levels: int) -> int:
    """The front-queue level of a Scrapy priority (higher priority: lower level).

    ``> 0`` goes to level 0, ``0`` to level 1, ``-1 .. -9`` (retries, depth
    priority) to level 2 and ``<= -10`` to the last level; clamped to ``levels``.
    """
    if priority > 0:
        level = 0
    elif priority == 0:
        level = 1
    elif priority > -10:
        level = 2
    else:
        level = 3
    return min(level, levels - 1)
