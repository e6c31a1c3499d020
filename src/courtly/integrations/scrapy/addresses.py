"""The address Scrapy will connect to, for the address check and the per-IP cap.

Names are looked up once per process with the installed reactor's resolver (the
one Scrapy uses, so a hosts-file resolver applies); literals need no lookup.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from scrapy.utils.defer import maybe_deferred_to_future

from courtly.errors import InvalidURL
from courtly.robots import authority_of

__all__ = ["Addresses"]


class Addresses:
    """A per-process cache of host name -> address (``None``: the lookup failed)."""

    def __init__(self) -> None:
        self._ips: dict[str, str | None] = {}

    def known(self, url: str) -> bool:
        """Whether the address of ``url``'s host is known (a literal, or looked up)."""
        try:
            host = authority_of(url)[1].strip("[]")
        except InvalidURL:
            return True
        if host in self._ips:
            return True
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return False
        return True

    async def resolve(self, hostname: str) -> str | None:
        """The address of ``hostname``, ``None`` if unknown."""
        host = hostname.strip("[]")
        try:
            return str(ipaddress.ip_address(host))
        except ValueError:
            pass
        if host in self._ips:
            return self._ips[host]
        from twisted.internet import reactor  # the installed one: importing it earlier installs one

        resolver: Any = reactor
        try:
            ip = str(await maybe_deferred_to_future(resolver.resolve(host)))
        except Exception:
            ip = None  # Scrapy's own lookup will fail too, as a network error
        self._ips[host] = ip
        return ip
