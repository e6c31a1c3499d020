"""Configuration of the HTTP fetcher."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from courtly.errors import ConfigError

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_DECODED_BYTES",
    "DEFAULT_MAX_URL_LENGTH",
    "DEFAULT_USER_AGENT",
    "FetchConfig",
]

MIB = 1024 * 1024

DEFAULT_USER_AGENT = "courtly/0.1"
DEFAULT_MAX_BODY_BYTES = 10 * MIB
DEFAULT_MAX_DECODED_BYTES = 40 * MIB
DEFAULT_MAX_URL_LENGTH = 2048


@dataclass(frozen=True, slots=True)
class FetchConfig:
    """Knobs of :class:`courtly.fetch.HttpFetcher`; every size in bytes, every duration in seconds.

    - ``user_agent``: sent on every request. The default is only the product token;
      a real crawl should append a contact, e.g. ``courtly/0.1 (+https://you.example/bot)``.
    - ``connect_timeout_s``: TCP (and TLS) connection set-up, per attempt.
    - ``total_timeout_s``: the whole exchange, from sending the request to the last
      body byte. A timeout before the response head raises ``FetchError("timeout")``;
      one during the body returns what arrived with ``truncated=True``.
    - ``max_body_bytes``: cap on the bytes read off the wire (still content-encoded).
    - ``max_decoded_bytes``: cap on the body after gzip/deflate/br decoding. The
      default (40 MiB, 4x the wire cap) admits ordinary HTML compression ratios and
      stops decompression bombs; memory per fetch is bounded by the sum of both caps.
    - ``per_ip_concurrency``: requests in flight to one resolved IP address, across
      all host names that resolve to it. Also the keep-alive pool limit per host.
    - ``allow_private_networks``: when false (the default) loopback, private,
      link-local, CGNAT, metadata, multicast and reserved addresses are refused.
    - ``hosts_file``: an ``/etc/hosts``-format file whose names bypass DNS (their
      addresses still pass the address guard).
    - ``verify_tls``: when true (the default) an https server's certificate must check
      out (chain and name); false fetches anyway (the exchange is still encrypted).
    - ``dns_ttl_s`` / ``dns_negative_ttl_s``: how long a DNS answer / failure is cached.
    - ``max_url_length``: longer URLs fail with ``FetchError("too_long_url")``.
    - ``keepalive_timeout_s``: an idle connection idle longer than this is never reused
      (and is closed within as long again); 0 closes every connection after its
      request. 4 s outlasts a host's politeness gap at the default delays (1 s, or
      twice the fetch time), so a host's requests share one connection, yet stays
      under the most common server idle timeout (5 s: Apache httpd, Node.js), so
      the fetcher never reuses a connection the server is closing (the request
      would fail: it is not retried), and few idle connections pile up on a wide
      crawl (benchmarks/connections.py).
    - ``robots_timeout_s``: the total timeout of a robots.txt exchange (see
      :meth:`HttpFetcher.limited`), shorter than a page's: a robots.txt that has
      not answered by then is unreachable (disallow all, retried later). While it
      hangs it holds one of its address's ``per_ip_concurrency`` slots, so a long
      wait keeps the address's other hosts from being fetched on time.
    """

    user_agent: str = DEFAULT_USER_AGENT
    connect_timeout_s: float = 10.0
    total_timeout_s: float = 30.0
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_decoded_bytes: int = DEFAULT_MAX_DECODED_BYTES
    per_ip_concurrency: int = 2
    allow_private_networks: bool = False
    hosts_file: Path | None = None
    verify_tls: bool = True
    dns_ttl_s: float = 300.0
    dns_negative_ttl_s: float = 30.0
    max_url_length: int = DEFAULT_MAX_URL_LENGTH
    keepalive_timeout_s: float = 4.0
    robots_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        if not self.user_agent.strip():
            raise ConfigError("user_agent must not be empty")
        if any(c in self.user_agent for c in "\r\n"):
            raise ConfigError("user_agent must be one line")
        for name in (
            "connect_timeout_s",
            "total_timeout_s",
            "robots_timeout_s",
            "max_body_bytes",
            "max_decoded_bytes",
            "per_ip_concurrency",
            "max_url_length",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)!r}")
        for name in ("dns_ttl_s", "dns_negative_ttl_s", "keepalive_timeout_s"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must not be negative, got {getattr(self, name)!r}")
