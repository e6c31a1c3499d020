from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from courtly.fetch import is_blocked_address

BLOCKED = [
    # (address, word the reason must contain)
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("::1", "loopback"),
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("fc00::1", "private"),
    ("fd12:3456::1", "private"),
    ("169.254.1.1", "link-local"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("169.254.169.254", "metadata"),
    ("fd00:ec2::254", "metadata"),
    ("100.100.100.200", "metadata"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.127.255.255", "carrier-grade NAT"),
    ("0.0.0.0", "unspecified"),
    ("::", "unspecified"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("255.255.255.255", "broadcast"),
    ("240.0.0.1", "reserved"),
    ("192.0.2.10", "documentation"),
    ("2001:db8::1", "documentation"),
    ("198.18.0.1", "benchmarking"),
    # IPv4 inside IPv6
    ("::ffff:127.0.0.1", "ipv4-mapped loopback"),
    ("::ffff:10.0.0.1", "ipv4-mapped private"),
    ("::ffff:169.254.169.254", "ipv4-mapped cloud metadata"),
    ("::ffff:100.64.0.1", "ipv4-mapped carrier-grade NAT"),
    ("64:ff9b::7f00:1", "nat64 loopback"),
    ("2002:c0a8:0101::1", "6to4 private"),
    # not an address at all
    ("localhost", "not an IP address"),
    ("127.1", "not an IP address"),
    ("", "not an IP address"),
]

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "172.32.0.1",  # just outside 172.16/12
    "100.128.0.1",  # just outside 100.64/10
    "169.253.255.255",
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
]


@pytest.mark.parametrize(("address", "reason_word"), BLOCKED)
def test_blocked_addresses_give_a_reason(address: str, reason_word: str) -> None:
    reason = is_blocked_address(address)
    assert reason is not None
    assert reason_word in reason


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    assert is_blocked_address(address) is None


@settings(max_examples=200)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_mapped_v6_agrees_with_v4(value: int) -> None:
    v4 = ipaddress.IPv4Address(value)
    mapped = ipaddress.IPv6Address(f"::ffff:{v4}")
    plain = is_blocked_address(str(v4))
    wrapped = is_blocked_address(str(mapped))
    assert (plain is None) == (wrapped is None)
    if plain is not None:
        assert wrapped == f"ipv4-mapped {plain}"


@settings(max_examples=200)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_everything_python_calls_private_is_blocked(value: int) -> None:
    address = ipaddress.IPv4Address(value)
    if address.is_private or address.is_loopback or address.is_link_local:
        assert is_blocked_address(str(address)) is not None
