from __future__ import annotations

import re

import ada_url
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from courtly.errors import InvalidURL
from courtly.url import MAX_URL_LENGTH, JoinCache, UrlJoiner, canonicalize
from courtly.url.canonical import _clean
from tests.unit.url.strategies import hrefs, urls

BASE = "http://Example.com/dir/page.html?x=1#top"


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("a", "http://example.com/dir/a"),
        ("./a", "http://example.com/dir/a"),
        ("../a", "http://example.com/a"),
        ("../../../../a", "http://example.com/a"),  # ".." above the root stays at the root
        ("/abs/./x/../y", "http://example.com/abs/y"),
        ("sub/", "http://example.com/dir/sub/"),
        ("..", "http://example.com/"),
        (".", "http://example.com/dir/"),
        ("//cdn.Example.org:80/x#f", "http://cdn.example.org/x"),
        ("?q=2", "http://example.com/dir/page.html?q=2"),
        ("?", "http://example.com/dir/page.html"),
        ("#frag", "http://example.com/dir/page.html?x=1"),
        ("  /spaced path \n", "http://example.com/spaced%20path"),
        ("/a?q=a b", "http://example.com/a?q=a%20b"),
        ("/w\nrapped", "http://example.com/wrapped"),
        ("..\\up\\file", "http://example.com/up/file"),
        ("http://other.com\\p", "http://other.com/p"),
        ("https://other.com:443/p?", "https://other.com/p"),
        ("HTTP://UP.COM", "http://up.com/"),
        ("http:rel", "http://example.com/dir/rel"),  # same scheme, no "//": relative
        ("https:host", "https://host/"),
        ("%7Euser/caf%c3%a9", "http://example.com/dir/~user/caf%C3%A9"),
        ("/münchen?q=é", "http://example.com/m%C3%BCnchen?q=%C3%A9"),
        ("//Bücher.example/", "http://xn--bcher-kva.example/"),
        ("1a:b", "http://example.com/dir/1a:b"),
    ],
)
def test_join(href: str, expected: str) -> None:
    assert UrlJoiner(BASE).join(href) == expected


@pytest.mark.parametrize(
    "href",
    [
        "",
        "   ",
        "\n\t",
        "mailto:someone@example.com",
        "javascript:void(0)",
        " JavaScript:alert(1)",
        "data:text/html,hi",
        "tel:+123",
        "ftp://example.com/",
        "a:b/c",
        "//",
        "http://[::1",
        "http://exa mple.com/",
        "http://e.com:99999/",
    ],
)
def test_join_refuses(href: str) -> None:
    assert UrlJoiner(BASE).join(href) is None


def test_base_with_escaped_segments_keeps_them() -> None:
    joiner = UrlJoiner("http://e.com/a%2Fb/c%20d/page")
    assert joiner.join("x") == "http://e.com/a%2Fb/c%20d/x"
    assert joiner.join("../y") == "http://e.com/a%2Fb/y"


def test_base_is_canonical_and_bad_base_raises() -> None:
    assert UrlJoiner(BASE).base_url == "http://example.com/dir/page.html?x=1"
    with pytest.raises(InvalidURL):
        UrlJoiner("mailto:x@example.com")


def test_join_respects_max_length() -> None:
    joiner = UrlJoiner("http://e.com/", max_length=30)
    assert joiner.join("/short") == "http://e.com/short"
    assert joiner.join("/" + "a" * 30) is None
    assert UrlJoiner(BASE).join("/" + "a" * MAX_URL_LENGTH) is None


_AUTHORITY_LESS = re.compile(r"(?i)(?:https?:)?[/\\\\]{3,}")
"""An href with an empty authority: three or more slashes (or backslashes) after the scheme."""


@settings(max_examples=300, deadline=None)
@given(urls, hrefs)
@example(base="http://[::1]", href="a%3A")  # an escaped colon in a relative first segment
@example(base="http://a.test/d/", href="a%3Ab/c?q=%3A")
def test_join_gives_canonical_urls_as_browsers_resolve_them(base: str, href: str) -> None:
    try:
        joiner = UrlJoiner(base)
    except InvalidURL:
        return
    joined = joiner.join(href)
    if joined is not None:
        assert canonicalize(joined) == joined
    if not href.strip():
        assert joined is None
        return
    if _AUTHORITY_LESS.match(_clean(href)):
        # Browsers read "///a" and "http:///a" as host "a"; courtly refuses an empty authority
        # (docs/urls.md): nothing that has no host is ever given one.
        assert joined is None
        return
    # The WHATWG resolution, canonicalised, is the oracle.
    try:
        expected: str | None = canonicalize(ada_url.join_url(joiner.base_url, href))
    except ValueError:
        expected = None
    assert joined == expected


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("/s/1.html?sid=0a1b2c3d", "http://a.test/s/1.html"),
        ("s/2.html?x=1&PHPSESSID=abcdef0123456789", "http://a.test/dir/s/2.html?x=1"),
        ("/p;jsessionid=ABCDEF01", "http://a.test/p"),
    ],
)
def test_joined_links_drop_session_ids_as_canonicalize_does(href: str, expected: str) -> None:
    joined = UrlJoiner("http://a.test/dir/page.html").join(href)
    assert joined == expected == canonicalize(ada_url.join_url("http://a.test/dir/page.html", href))


_RELATED_BASES = [
    "http://a.test/dir/page.html?x=1",
    "http://a.test/dir/other.html",
    "http://a.test/dir/",
    "http://a.test/else/deeper/x",
    "https://a.test/dir/page.html",
    "http://a.test:8080/dir/page.html",
    "http://b.test/dir/page.html?y=2",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_RELATED_BASES),
            st.one_of(hrefs, st.sampled_from(["", "?q=1", "#top", "/", "x.html", "//c.test/p"])),
        ),
        max_size=25,
    ),
    st.integers(1, 6),
)
def test_a_shared_cache_never_changes_an_answer(pairs: list[tuple[str, str]], size: int) -> None:
    cache = JoinCache(max_entries=size)
    for base, href in pairs + pairs:  # twice: the second pass answers from the cache
        cached = UrlJoiner(base, canonical=True, cache=cache).join(href)
        assert cached == UrlJoiner(base).join(href), (base, href)
    assert len(cache) <= size


def test_sibling_pages_share_answers_through_the_cache() -> None:
    cache = JoinCache()
    first = UrlJoiner("http://a.test/dir/page1.html", canonical=True, cache=cache)
    assert first.join("/x.html") == "http://a.test/x.html"
    assert first.join("y.html") == "http://a.test/dir/y.html"
    assert first.join("http://B.test/z") == "http://b.test/z"
    assert first.join("?q=1") == "http://a.test/dir/page1.html?q=1"  # base-path dependent
    assert len(cache) == 3
    sibling = UrlJoiner("http://a.test/dir/page2.html", canonical=True, cache=cache)
    assert sibling.join("y.html") == "http://a.test/dir/y.html"
    assert sibling.join("?q=1") == "http://a.test/dir/page2.html?q=1"
    assert len(cache) == 3
    elsewhere = UrlJoiner("http://a.test/other/page.html", canonical=True, cache=cache)
    assert elsewhere.join("y.html") == "http://a.test/other/y.html"
    assert elsewhere.join("/x.html") == "http://a.test/x.html"
    assert len(cache) == 4


def test_a_cache_is_shared_only_at_its_max_length() -> None:
    with pytest.raises(ValueError, match="max_length"):
        UrlJoiner("http://a.test/", max_length=100, cache=JoinCache())


_PLAIN_BASES = (
    "http://example.com/",
    "http://example.com/dir/page.html?x=1",
    "https://www.site0.test:8080/p/a/b/",
)


@settings(max_examples=400)
@given(
    base=st.sampled_from(_PLAIN_BASES),
    href=st.text(alphabet="abZ09._~/-", min_size=1, max_size=24).filter(
        lambda h: not h.startswith("//")
    ),
)
def test_plain_path_hrefs_join_as_a_whatwg_parser_joins_them(base: str, href: str) -> None:
    """A bare path of unreserved characters takes the joiner's shortcut (no yarl parse);
    its answer is the WHATWG join of the same href, canonicalised."""
    expected = canonicalize(ada_url.join_url(canonicalize(base), href))
    assert UrlJoiner(base).join(href) == expected
    assert UrlJoiner(base, cache=JoinCache()).join(href) == expected
