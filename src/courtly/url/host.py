"""Hosts, registered domains and host keys: the units politeness is counted in.

A *host key* names the queue a URL waits in and the server whose politeness delay it shares.
Three modes, chosen per crawl:

- ``"host"`` (the default unit): the URL's authority without userinfo, ``a.site1.test:8080``.
  The port is kept when it is not the scheme's default, because two servers on one host name
  but different ports are different authorities (the sandbox web runs on a non-default port).
- ``"domain"``: the registered domain of the host (``a.site1.test`` -> ``site1.test``), with
  the same non-default port rule; one queue for all subdomains of a site.
- ``"ip"``: the resolved address; only the fetch layer knows it, so it calls
  :func:`ip_host_key` after its DNS lookup.

Registered domains come from the Public Suffix List (private suffixes included, so that
``user.github.io`` is its own site) through ``tldextract``'s bundled snapshot: no network,
no cache directory. Hosts under a suffix the list does not know, such as the reserved ``.test``
or ``.localhost`` names, take their last label as the suffix: ``a.site1.test`` -> ``site1.test``.
IP addresses and single-label hosts (``localhost``) are their own registered domain.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from typing import Any, Final, Literal

from courtly.errors import InvalidURL

__all__ = [
    "DomainResolver",
    "HostKeyMode",
    "canonical_authority",
    "host_key",
    "host_of",
    "hostname_of",
    "ip_host_key",
    "registered_domain",
]

HostKeyMode = Literal["host", "domain", "ip"]
"""How URLs are grouped for politeness: by host, by registered domain, or by resolved IP."""

_DEFAULT_PORTS: Final = {"http": "80", "https": "443"}
_AUTHORITY_RE: Final = re.compile(
    r"([A-Za-z][A-Za-z0-9+.-]*)://(?:[^@/?#\\]*@)?(\[[^\]/?#]*\]|[^:/?#\\]*)(?::([0-9]*))?"
)
_IPV4_RE: Final = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}")


def canonical_authority(url: str) -> str | None:
    """The authority of ``url`` when it is already spelt as a canonical URL spells it
    (``http://`` or ``https://``, lower case, a name or IPv4 host without userinfo or trailing
    dot, no default or empty port, a port without leading zeros, then ``/``); ``None``
    otherwise.

    This is the common case (the crawl's URLs are canonical), read without a regex.
    """
    if url.startswith("http://"):
        start, default = 7, ":80"
    elif url.startswith("https://"):
        start, default = 8, ":443"
    else:
        return None
    end = url.find("/", start)
    if end <= start:
        return None
    authority = url[start:end]
    if (
        "@" in authority
        or "?" in authority
        or "#" in authority
        or "\\" in authority
        or authority.lower() != authority
    ):
        return None
    host, colon, port = authority.partition(":")
    if colon and (
        not port.isdigit() or not port.isascii() or port[0] == "0" or authority.endswith(default)
    ):
        return None
    if not host or host[-1] == "." or "[" in host or "]" in host:  # IPv6: the regex reads it
        return None
    return authority


def _split_authority(url: str) -> tuple[str, str]:
    """Return ``(hostname, port_suffix)`` of an absolute http(s) URL; the suffix is ``":8080"``
    for a non-default port and ``""`` otherwise."""
    match = _AUTHORITY_RE.match(url)
    if match is None:
        raise InvalidURL(f"not an absolute URL: {url[:100]!r}")
    scheme, host, port = match.groups()
    scheme = scheme.lower()
    default_port = _DEFAULT_PORTS.get(scheme)
    if default_port is None:
        raise InvalidURL(f"not an http(s) URL: scheme {scheme!r}")
    if not host:
        raise InvalidURL(f"no host in URL {url[:100]!r}")
    host = host.lower()
    if host[-1] == ".":
        host = host[:-1]
    if not port or port == default_port:
        return host, ""
    return host, f":{int(port)}"


def host_of(url: str) -> str:
    """Return the host key of ``url`` in ``"host"`` mode: ``host`` or ``host:port``.

    The host is lower-case, IPv6 in brackets, without userinfo; the port is present only when it
    is not the scheme's default. ``url`` should be canonical (see :func:`canonicalize`); this
    function does not re-parse it (no IDNA), it only reads the authority. Raises
    :class:`courtly.errors.InvalidURL` when there is no http(s) authority to read.
    """
    authority = canonical_authority(url)
    if authority is not None:
        return authority
    host, port_suffix = _split_authority(url)
    return host + port_suffix


def hostname_of(url: str) -> str:
    """Return the host of ``url`` without any port (lower-case, IPv6 in brackets)."""
    return _split_authority(url)[0]


def _is_ip(host: str) -> bool:
    return host.startswith("[") or ":" in host or _IPV4_RE.fullmatch(host) is not None


class DomainResolver:
    """Maps host names to registered domains using the bundled Public Suffix List snapshot.

    The suffix list is loaded on first use (tens of milliseconds), never fetched; answers are
    memoised per instance (``cache_size`` hosts). Build one per crawl and pass it around.
    """

    __slots__ = ("_cached", "_extract", "_include_private")

    def __init__(self, *, include_private_domains: bool = True, cache_size: int = 65_536) -> None:
        self._include_private = include_private_domains
        self._extract: Any = None
        self._cached = lru_cache(maxsize=cache_size)(self._resolve)

    def registered_domain(self, host: str) -> str:
        """Return the registered domain of ``host`` (a host name; a ``:port`` is ignored).

        ``www.bbc.co.uk`` -> ``bbc.co.uk``; ``a.site1.test`` -> ``site1.test`` (unknown suffix:
        the last label); ``127.0.0.1``, ``[::1]`` and ``localhost`` -> themselves; a public
        suffix itself (``github.io``) -> itself. Output is lower-case without a trailing dot.
        """
        return self._cached(host)

    def _resolve(self, host: str) -> str:
        host = host.lower()
        if host.startswith("["):
            return host[: host.find("]") + 1] if "]" in host else host
        if host.count(":") == 1:
            host = host.partition(":")[0]
        if host.endswith("."):
            host = host[:-1]
        if "." not in host or _is_ip(host):
            return host
        if self._extract is None:
            import tldextract  # deferred: loading the suffix list costs tens of milliseconds

            self._extract = tldextract.TLDExtract(
                suffix_list_urls=(),
                cache_dir=None,
                include_psl_private_domains=self._include_private,
            )
        parts = self._extract(host)
        if not parts.suffix:
            return ".".join(host.rsplit(".", 2)[-2:])
        if not parts.domain:
            return host
        return f"{parts.domain}.{parts.suffix}"


def registered_domain(host: str, resolver: DomainResolver) -> str:
    """Return ``resolver.registered_domain(host)``; see :meth:`DomainResolver.registered_domain`."""
    return resolver.registered_domain(host)


def host_key(url: str, mode: HostKeyMode, resolver: DomainResolver | None = None) -> str:
    """Return the host key of the canonical ``url`` in ``mode`` ``"host"`` or ``"domain"``.

    ``"domain"`` needs a ``resolver``. ``"ip"`` cannot be computed from the URL alone: the fetch
    layer resolves the host and calls :func:`ip_host_key`; asking for it here raises ValueError.
    """
    host, port_suffix = _split_authority(url)
    if mode == "host":
        return host + port_suffix
    if mode == "domain":
        if resolver is None:
            raise ValueError("host_key mode 'domain' needs a DomainResolver")
        return resolver.registered_domain(host) + port_suffix
    if mode == "ip":
        raise ValueError("host_key mode 'ip' needs the resolved address: use ip_host_key")
    raise ValueError(f"unknown host key mode {mode!r}")


def ip_host_key(resolved_ip: str, url: str) -> str:
    """Return the ``"ip"``-mode host key: the resolved address of ``url``'s host, plus ``url``'s
    non-default port. IPv6 is compressed and bracketed (``[2001:db8::1]:8080``).

    Raises ValueError when ``resolved_ip`` is not an IP address.
    """
    address = ipaddress.ip_address(resolved_ip.strip("[]"))
    text = f"[{address.compressed}]" if address.version == 6 else address.compressed
    return text + _split_authority(url)[1]
