from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from courtly.errors import InvalidURL
from courtly.url import (
    DomainResolver,
    canonicalize,
    host_key,
    host_of,
    hostname_of,
    ip_host_key,
    registered_domain,
)
from courtly.url.host import _split_authority, canonical_authority
from tests.unit.url.strategies import urls


def _canonical_or_same(url: str) -> str:
    try:
        return canonicalize(url)
    except InvalidURL:
        return url


@pytest.mark.parametrize(
    ("url", "host", "hostname"),
    [
        ("http://a.site1.test:8080/x", "a.site1.test:8080", "a.site1.test"),
        ("http://example.com/", "example.com", "example.com"),
        ("https://example.com:8443/?q", "example.com:8443", "example.com"),
        ("http://user:pw@example.com/", "example.com", "example.com"),
        ("http://[::1]:8080/", "[::1]:8080", "[::1]"),
        ("https://[2001:db8::1]/", "[2001:db8::1]", "[2001:db8::1]"),
        ("http://127.0.0.1/", "127.0.0.1", "127.0.0.1"),
        # Tolerated even though not canonical: case, default port, trailing dot.
        ("HTTP://Example.COM:80/", "example.com", "example.com"),
        ("https://example.com.:443", "example.com", "example.com"),
    ],
)
def test_host_of(url: str, host: str, hostname: str) -> None:
    assert host_of(url) == host
    assert hostname_of(url) == hostname


def test_host_of_canonical_urls_never_carries_a_default_port() -> None:
    assert host_of(canonicalize("https://Bücher.example:443/")) == "xn--bcher-kva.example"
    assert host_of(canonicalize("http://e.com:443/")) == "e.com:443"


@pytest.mark.parametrize("bad", ["ftp://example.com/", "example.com/x", "http:///x", "/rel"])
def test_host_of_rejects(bad: str) -> None:
    with pytest.raises(InvalidURL):
        host_of(bad)


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("www.bbc.co.uk", "bbc.co.uk"),
        ("WWW.Example.COM", "example.com"),
        ("example.com.", "example.com"),
        ("a.b.example.com", "example.com"),
        ("user.github.io", "user.github.io"),  # private suffix: each tenant is a site
        ("github.io", "github.io"),  # a public suffix is its own registered domain
        ("co.uk", "co.uk"),
        ("a.site1.test", "site1.test"),  # .test is not in the list: last label is the suffix
        ("x.y.site1.test", "site1.test"),
        ("site1.test", "site1.test"),
        ("a.localhost", "a.localhost"),
        ("localhost", "localhost"),
        ("127.0.0.1", "127.0.0.1"),
        ("[::1]", "[::1]"),
        ("::1", "::1"),
        ("a.site1.test:8080", "site1.test"),
        ("xn--bcher-kva.xn--mnchen-3ya.de", "xn--mnchen-3ya.de"),
        ("foo.xn--p1ai", "foo.xn--p1ai"),
    ],
)
def test_registered_domain(host: str, domain: str) -> None:
    resolver = DomainResolver()
    assert registered_domain(host, resolver) == domain
    assert resolver.registered_domain(host) == domain  # cached answer is the same


def test_registered_domain_without_private_suffixes() -> None:
    assert DomainResolver(include_private_domains=False).registered_domain("a.b.github.io") == (
        "github.io"
    )


def test_host_key_modes() -> None:
    resolver = DomainResolver()
    url = "http://a.site1.test:8080/page"
    assert host_key(url, "host") == "a.site1.test:8080"
    assert host_key(url, "domain", resolver) == "site1.test:8080"
    assert host_key("https://news.bbc.co.uk/x", "domain", resolver) == "bbc.co.uk"
    assert host_key("http://[::1]:8080/", "domain", resolver) == "[::1]:8080"
    with pytest.raises(ValueError, match="ip_host_key"):
        host_key(url, "ip", resolver)
    with pytest.raises(ValueError, match="DomainResolver"):
        host_key(url, "domain")


def test_ip_host_key() -> None:
    assert ip_host_key("127.0.0.1", "http://a.site1.test:8080/") == "127.0.0.1:8080"
    assert ip_host_key("93.184.216.34", "https://example.com/") == "93.184.216.34"
    assert ip_host_key("2001:DB8:0::1", "https://example.com:443/") == "[2001:db8::1]"
    assert ip_host_key("[::1]", "http://x.test:81/") == "[::1]:81"
    with pytest.raises(ValueError):
        ip_host_key("not-an-ip", "http://x.test/")


@settings(max_examples=500, deadline=None)
@given(st.one_of(urls, urls.map(_canonical_or_same)))
def test_the_canonical_spelling_shortcut_reads_the_same_host_key_as_the_full_parse(
    url: str,
) -> None:
    try:
        host, port_suffix = _split_authority(url)
    except InvalidURL:
        with pytest.raises(InvalidURL):
            host_of(url)
        return
    assert host_of(url) == host + port_suffix


@pytest.mark.parametrize(
    "url",
    [
        "http://a:1:2/",
        "http://[::1/",
        "http://a.b:8080x/",
        "http://a.b:/x",
        "http://a.b:0080/",
        "http://a.b.:8080/",
        "https://a.b:443/",
        "http://u@a.b/",
        "http://A.b/",
        "http://a.b:\u0663/",
    ],
)
def test_odd_authorities_take_the_full_parse(url: str) -> None:
    assert canonical_authority(url) is None
    host, port_suffix = _split_authority(url)
    assert host_of(url) == host + port_suffix


def test_a_url_without_a_host_is_refused_by_both_readings() -> None:
    assert canonical_authority("http:///x") is None
    with pytest.raises(InvalidURL):
        host_of("http:///x")
