"""The address guard: which resolved IP addresses a crawler must never connect to.

:func:`is_blocked_address` is a pure function of one address string. It is
checked on the *resolved* IP (never on the host name) so that a DNS answer
cannot smuggle a private address past the check; the fetcher then pins the
connection to the address it checked.
"""

from __future__ import annotations

import ipaddress

__all__ = ["is_blocked_address"]

_IPv4 = ipaddress.IPv4Network
_IPv6 = ipaddress.IPv6Network

# First match wins, so the specific ranges (metadata) come before the broad ones.
_V4_RULES: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_IPv4("169.254.169.254/32"), "cloud metadata"),
    (_IPv4("100.100.100.200/32"), "cloud metadata"),
    (_IPv4("0.0.0.0/8"), "unspecified"),
    (_IPv4("127.0.0.0/8"), "loopback"),
    (_IPv4("10.0.0.0/8"), "private"),
    (_IPv4("172.16.0.0/12"), "private"),
    (_IPv4("192.168.0.0/16"), "private"),
    (_IPv4("100.64.0.0/10"), "carrier-grade NAT"),
    (_IPv4("169.254.0.0/16"), "link-local"),
    (_IPv4("224.0.0.0/4"), "multicast"),
    (_IPv4("255.255.255.255/32"), "broadcast"),
    (_IPv4("240.0.0.0/4"), "reserved"),
    (_IPv4("192.0.0.0/24"), "reserved"),
    (_IPv4("192.0.2.0/24"), "documentation"),
    (_IPv4("198.51.100.0/24"), "documentation"),
    (_IPv4("203.0.113.0/24"), "documentation"),
    (_IPv4("198.18.0.0/15"), "benchmarking"),
)

_V6_RULES: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_IPv6("fd00:ec2::254/128"), "cloud metadata"),
    (_IPv6("::/128"), "unspecified"),
    (_IPv6("::1/128"), "loopback"),
    (_IPv6("fc00::/7"), "private"),
    (_IPv6("fec0::/10"), "private"),
    (_IPv6("fe80::/10"), "link-local"),
    (_IPv6("ff00::/8"), "multicast"),
    (_IPv6("2001:db8::/32"), "documentation"),
    (_IPv6("100::/64"), "reserved"),
    (_IPv6("::/8"), "reserved"),
)

# IPv6 ranges that carry an IPv4 address; the embedded address is judged too.
_NAT64 = _IPv6("64:ff9b::/96")
_NAT64_LOCAL = _IPv6("64:ff9b:1::/48")


def _v4_reason(ip: ipaddress.IPv4Address) -> str | None:
    for network, reason in _V4_RULES:
        if ip in network:
            return reason
    if not ip.is_global:
        return "reserved"
    return None


def _v6_reason(ip: ipaddress.IPv6Address) -> str | None:
    mapped = ip.ipv4_mapped
    if mapped is not None:
        inner = _v4_reason(mapped)
        return None if inner is None else f"ipv4-mapped {inner}"
    if ip in _NAT64 or ip in _NAT64_LOCAL:
        inner = _v4_reason(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        return None if inner is None else f"nat64 {inner}"
    sixtofour = ip.sixtofour
    if sixtofour is not None:
        inner = _v4_reason(sixtofour)
        return None if inner is None else f"6to4 {inner}"
    for network, reason in _V6_RULES:
        if ip in network:
            return reason
    if not ip.is_global:
        return "reserved"
    return None


def is_blocked_address(ip: str) -> str | None:
    """Why ``ip`` must not be connected to, or ``None`` when it is a public address.

    ``ip`` is a textual IPv4 or IPv6 address (an IPv6 zone suffix such as
    ``%eth0`` is accepted). Blocked, with the reason returned: loopback,
    private (RFC 1918, ``fc00::/7``), link-local (``169.254/16``, ``fe80::/10``),
    cloud metadata (``169.254.169.254``, ``fd00:ec2::254``, ``100.100.100.200``),
    carrier-grade NAT (``100.64/10``), unspecified, multicast, broadcast,
    documentation, benchmarking and other reserved ranges, and the same
    addresses embedded in IPv6 (IPv4-mapped, NAT64, 6to4). A string that is
    not an address is blocked too ("not an IP address").
    """
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return "not an IP address"
    if isinstance(address, ipaddress.IPv4Address):
        return _v4_reason(address)
    return _v6_reason(address)
