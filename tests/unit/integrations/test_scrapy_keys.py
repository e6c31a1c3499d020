"""Frontier keys of Scrapy requests: host queue, fingerprint identity, priority level."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtly.errors import InvalidURL
from courtly.integrations.scrapy.keys import key_for, level_for_priority, payload_id_of
from courtly.url import host_of

FP = bytes(range(20))


def test_a_filtered_request_is_keyed_by_its_fingerprint() -> None:
    a = key_for("http://Example.org:8080/a?x=1", FP, dont_filter=False)
    b = key_for("http://example.org:8080/other", FP, dont_filter=False)
    assert a == b == f"http://example.org:8080/#courtly:{FP.hex()}"
    assert host_of(a) == "example.org:8080"
    assert payload_id_of(a) == FP.hex()


def test_dont_filter_requests_get_a_key_of_their_own() -> None:
    keys = {key_for("https://example.org/", FP, dont_filter=True) for _ in range(50)}
    assert len(keys) == 50
    for key in keys:
        assert key.startswith("https://example.org/#courtly:")
        assert host_of(key) == "example.org"  # the default port is dropped
        assert payload_id_of(key).startswith(FP.hex() + ":")


def test_the_host_queue_is_the_urls_host() -> None:
    assert host_of(key_for("http://[::1]:81/x", FP, dont_filter=False)) == host_of(
        "http://[::1]:81/x"
    )


@pytest.mark.parametrize("url", ["data:text/plain,hi", "file:///etc/hosts", "ftp://a/b", "/rel"])
def test_non_http_urls_have_no_key(url: str) -> None:
    with pytest.raises(InvalidURL):
        key_for(url, FP, dont_filter=False)


def test_a_foreign_string_is_no_key() -> None:
    with pytest.raises(InvalidURL):
        payload_id_of("http://example.org/#section")


@given(st.integers(-1000, 1000), st.integers(-1000, 1000), st.integers(1, 8))
def test_higher_priority_never_gets_a_later_level(a: int, b: int, levels: int) -> None:
    high, low = max(a, b), min(a, b)
    assert 0 <= level_for_priority(high, levels) <= level_for_priority(low, levels) < levels
