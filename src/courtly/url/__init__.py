"""The URL layer (pure): canonical form, tracking parameters, fingerprint, host keys,
scope and trap guards."""

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
from courtly.url.params import DEFAULT_PARAMS, TRACKING_PARAMS, ParamPolicy
from courtly.url.scope import Scope, ScopeMode
from courtly.url.traps import TrapConfig, trap_reason

__all__ = [
    "DEFAULT_PARAMS",
    "MAX_URL_LENGTH",
    "TRACKING_PARAMS",
    "DomainResolver",
    "HostKeyMode",
    "JoinCache",
    "ParamPolicy",
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
