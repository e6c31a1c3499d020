"""The URL layer (pure): canonical form, fingerprint, host keys, scope and trap guards."""

from __future__ import annotations

from courtly.url.canonical import MAX_URL_LENGTH, JoinCache, UrlJoiner, canonicalize
from courtly.url.fingerprint import url_fingerprint
from courtly.url.host import (
    DomainResolver,
    HostKeyMode,
    canonical_authority,
    host_key,
    host_of,
    hostname_of,
    ip_host_key,
    registered_domain,
)
from courtly.url.scope import Scope, ScopeMode
from courtly.url.traps import TrapConfig, trap_reason

__all__ = [
    "MAX_URL_LENGTH",
    "DomainResolver",
    "HostKeyMode",
    "JoinCache",
    "Scope",
    "ScopeMode",
    "TrapConfig",
    "UrlJoiner",
    "canonical_authority",
    "canonicalize",
    "host_key",
    "host_of",
    "hostname_of",
    "ip_host_key",
    "registered_domain",
    "trap_reason",
    "url_fingerprint",
]
