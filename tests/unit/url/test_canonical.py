from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from yarl import URL

from courtly.errors import InvalidURL
from courtly.url import MAX_URL_LENGTH, canonicalize, host_of
from courtly.url.canonical import _canonicalize_whatwg, _is_plain_canonical, _serialize
from courtly.url.params import DEFAULT_PARAMS
from tests.unit.url.strategies import urls

# Each row: spellings of one resource that must collapse to one canonical form.
DUPLICATES: list[tuple[str, list[str]]] = [
    (
        "http://example.com/a",
        [
            "http://Example.COM/a",
            "HTTP://EXAMPLE.COM/a",
            "http://example.com:80/a",
            "http://example.com/a#frag",
            "http://example.com/a?",
            "http://example.com/a?#",
            "http://example.com./a",
            "http://example.com/b/../a",
            "http://example.com/./a",
            "http://example.com/%2e/a",
            "  http://example.com/a\n",
            "http://exam\tple.com/a",
            "http://example.com\\a",
        ],
    ),
    (
        "https://example.com/",
        ["https://example.com", "https://example.com:443", "https://EXAMPLE.com:443/#"],
    ),
    ("http://example.com/~user", ["http://example.com/%7Euser", "http://example.com/%7euser"]),
    ("http://example.com/caf%C3%A9", ["http://example.com/caf%c3%a9", "http://example.com/café"]),
    (
        "http://example.com/p?q=%C3%A9",
        ["http://example.com/p?q=%c3%a9", "http://example.com/p?q=é"],
    ),
    ("http://example.com/AB", ["http://example.com/%41%42"]),
    (
        "http://xn--bcher-kva.example/",
        ["http://Bücher.example/", "http://bücher.example", "http://XN--BCHER-KVA.example/"],
    ),
    ("http://xn--fa-hia.de/", ["http://faß.de/"]),  # UTS 46, not IDNA 2003's "fass.de"
    ("http://xn--e1afmkfd.xn--p1ai/", ["http://пример.рф/"]),
    ("http://127.0.0.1/", ["http://0x7f.1/", "http://127.000.0.1/", "http://127.0.0.1.:80/"]),
    ("http://[::1]:8080/", ["http://[0:0::1]:8080", "http://[::1]:8080/#"]),
    ("http://example.com/b", ["http://example.com/a/../../../b"]),
    ("http://example.com:8080/", ["http://example.com:8080", "http://EXAMPLE.com:08080/"]),
    # Browser readings (WHATWG), taken when yarl refuses or reads differently; but no host
    # is ever read out of a path ("http:e.com", "http:///e.com": see test_authority.py).
    ("http://e.com/", ["http://%65.com/", "http://e\u200b.com/"]),
]


@pytest.mark.parametrize(
    ("canonical", "spelling"),
    [(canonical, spelling) for canonical, spellings in DUPLICATES for spelling in spellings],
)
def test_duplicate_spellings_collapse(canonical: str, spelling: str) -> None:
    assert canonicalize(spelling) == canonical
    assert canonicalize(canonical) == canonical


def test_query_is_not_sorted_and_meaningful_escapes_stay() -> None:
    url = "http://example.com/p?b=2&a=1&c=&d"
    assert canonicalize(url) == url
    assert canonicalize("http://e.com/a%2Fb?x=%26y&z=%3D") == "http://e.com/a%2Fb?x=%26y&z=%3D"
    assert canonicalize("http://e.com/a%3Fb%23c") == "http://e.com/a%3Fb%23c"


def test_userinfo_is_kept_but_empty_parts_dropped() -> None:
    assert canonicalize("http://User:Pass@Host.com/") == "http://User:Pass@host.com/"
    assert canonicalize("http://:@host.com/") == "http://host.com/"
    assert canonicalize("http://u:@host.com/") == "http://u@host.com/"


def test_non_ascii_and_bad_escapes_are_encoded() -> None:
    assert canonicalize("http://e.com/a b/€") == "http://e.com/a%20b/%E2%82%AC"
    assert canonicalize("http://e.com/%zz") == "http://e.com/%25zz"


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "   ",
        "/relative/path",
        "example.com/no-scheme",
        "ftp://example.com/",
        "mailto:a@example.com",
        "javascript:alert(1)",
        "data:text/plain,hi",
        "http://",
        "http://:80/",
        "http://exa mple.com/",
        "http://e..com/",
        "http://e.com:99999/",
        "http://e.com:abc/",
        "http://e.com:0/",
        "http://999.1.1.1/",
        "http://1.2.3.4.5/",
        "http://[::1/",
        "http://[fe80::1%25eth0]/",
    ],
)
def test_rejects(bad: str) -> None:
    with pytest.raises(InvalidURL):
        canonicalize(bad)


def test_max_length() -> None:
    assert MAX_URL_LENGTH == 2048
    head = "http://example.com/"
    fits = head + "a" * (MAX_URL_LENGTH - len(head))
    assert canonicalize(fits) == fits
    with pytest.raises(InvalidURL):
        canonicalize(fits + "a")
    with pytest.raises(InvalidURL):
        canonicalize("http://example.com/abc", max_length=20)
    # The limit also applies after escaping: 5 characters become 30.
    with pytest.raises(InvalidURL):
        canonicalize("http://e.com/€€€€€", max_length=30)
    assert canonicalize("http://e.com/€", max_length=30) == "http://e.com/%E2%82%AC"


def test_invalid_url_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        canonicalize("ftp://x/")


@settings(max_examples=400, deadline=None)
@given(urls)
def test_canonicalize_is_idempotent(url: str) -> None:
    try:
        canonical = canonicalize(url)
    except InvalidURL:
        return
    assert canonicalize(canonical) == canonical
    assert canonical.isascii()
    assert canonical.startswith(("http://", "https://"))
    assert "#" not in canonical
    scheme, _, rest = canonical.partition("://")
    authority, slash, path_query = rest.partition("/")
    assert slash == "/"
    assert not authority.endswith({"http": ":80", "https": ":443"}[scheme])
    if "?" in path_query:
        assert path_query.partition("?")[2] != ""
    host = host_of(canonical)
    assert host == host.lower()
    assert not host.endswith(".")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://a.test/s/1.html?sid=0a1b2c3d", "http://a.test/s/1.html"),
        ("http://a.test/p?x=1&PHPSESSID=abcdef0123456789&y=2", "http://a.test/p?x=1&y=2"),
        ("http://a.test/p;jsessionid=ABCDEF0123?q=1", "http://a.test/p?q=1"),
        ("http://a.test/p?ASPSESSIONIDQQ=ABCDEFGHIJKLMNOPQRSTUVWX", "http://a.test/p"),
        ("http://a.test/story?sid=42", "http://a.test/story?sid=42"),
        ("http://a.test/p?side=0a1b2c3d4e", "http://a.test/p?side=0a1b2c3d4e"),
    ],
)
def test_session_ids_are_dropped(raw: str, expected: str) -> None:
    assert canonicalize(raw) == expected
    assert canonicalize(expected) == expected


_PLAIN_LABELS = ("a", "b", "xn--", "xn--fa-hia", "0", "1", "255", "0x", "0x1f", "-", "_", "com")
_PLAIN_PORTS = ("", ":0", ":1", ":80", ":443", ":8080", ":65535", ":65536", ":08080")
_PLAIN_SEGMENTS = ("a", ".", "..", "~", "-", "_", ".a", "a.", "", "x.html", "A", "Z9")


@settings(max_examples=600, deadline=None)
@given(
    st.sampled_from(("http://", "https://")),
    st.lists(
        st.lists(st.sampled_from(_PLAIN_LABELS), min_size=1, max_size=2).map("".join),
        min_size=1,
        max_size=3,
    ).map(".".join),
    st.sampled_from(_PLAIN_PORTS),
    st.lists(st.sampled_from(_PLAIN_SEGMENTS), max_size=4).map("/".join),
)
def test_plain_canonical_fast_path_agrees_with_the_parse(
    scheme: str, host: str, port: str, path: str
) -> None:
    # A URL taken as its own canonical form without parsing is one the parse keeps as it is.
    url = f"{scheme}{host}{port}/{path}"
    if not _is_plain_canonical(url):
        return
    try:
        parsed = _serialize(URL(url), DEFAULT_PARAMS)
    except ValueError as error:
        pytest.fail(f"{url!r} taken as canonical, but the parse refuses it: {error}")
    if parsed is None:
        parsed = _canonicalize_whatwg(url, DEFAULT_PARAMS)
    assert parsed == url


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/a/b.html",
        "https://a-b.example_1.test:8080/",
        "http://x.test:65535/~u/-/_.x",
    ],
)
def test_plain_canonical_urls_are_returned_as_they_are(url: str) -> None:
    assert _is_plain_canonical(url)
    assert canonicalize(url) == url


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com:80/",
        "https://example.com:443/",
        "http://example.com:080/",
        "http://example.com:65536/",
        "http://127.0.0.1/",
        "http://a.0x1f/",
        "http://example.com./",
        "http://Example.com/",
        "HTTP://example.com/",
        "http://example.com",
        "http://example.com/a/./b",
        "http://example.com/a/../b",
        "http://example.com/a?q",
        "http://example.com/a#f",
        "http://u@example.com/",
        "http://example.com/%7E",
    ],
)
def test_urls_the_fast_path_leaves_to_the_parse(url: str) -> None:
    assert not _is_plain_canonical(url)
