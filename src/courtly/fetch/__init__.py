"""The HTTP layer: fetcher, DNS cache, address guard, per-IP caps, body decoding.

See ``docs/fetch.md`` for the contract and the defaults.
"""

from __future__ import annotations

from courtly.fetch.charset import decode_text
from courtly.fetch.config import FetchConfig
from courtly.fetch.dns import DnsCache, getaddrinfo_addresses
from courtly.fetch.guard import is_blocked_address
from courtly.fetch.hosts import load_hosts_file, parse_hosts_text
from courtly.fetch.http_fetcher import HttpFetcher
from courtly.fetch.memory import MemoryFetcher
from courtly.fetch.records import Fetcher, FetchResult

__all__ = [
    "DnsCache",
    "FetchConfig",
    "FetchResult",
    "Fetcher",
    "HttpFetcher",
    "MemoryFetcher",
    "decode_text",
    "getaddrinfo_addresses",
    "is_blocked_address",
    "load_hosts_file",
    "parse_hosts_text",
]
