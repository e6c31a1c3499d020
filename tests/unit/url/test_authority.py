"""No http(s) URL without an authority is ever given a host (``http:///path`` is refused).

WHATWG parsers read ``http:///path``, ``http:/path`` and ``http:path`` as the host
``path``; courtly refuses them as seeds and never makes a host out of a path when
joining an href either.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from courtly.errors import InvalidURL
from courtly.url import UrlJoiner, canonicalize, host_of

BASE = "http://base.test/dir/page"

schemes = st.sampled_from(["http", "https", "HTTP", "Https"])
# what follows the separators: any URL-ish text (it may look like a host), not a separator
rests = st.text(alphabet="abcxyz019.-_~:@/\\?#[]%=&+ ", max_size=40).filter(
    lambda text: not text.startswith(("/", "\\"))
)
separators = st.one_of(
    st.text(alphabet="/\\", min_size=0, max_size=1),
    st.text(alphabet="/\\", min_size=3, max_size=8),
)
too_many = st.text(alphabet="/\\", min_size=3, max_size=8)


@settings(max_examples=400)
@given(scheme=schemes, slashes=separators, rest=rests)
def test_an_absolute_url_without_two_slashes_is_refused(
    scheme: str, slashes: str, rest: str
) -> None:
    with pytest.raises(InvalidURL):
        canonicalize(f"{scheme}:{slashes}{rest}")


@settings(max_examples=300)
@given(
    scheme=schemes,
    userinfo=st.sampled_from(["", "@", "user@", "u:p@", ":@"]),
    port=st.sampled_from(["", ":", ":80", ":8080"]),
    path=st.sampled_from(["", "/", "/path", "/a/b?q=1", "?q", "#f"]),
)
def test_an_empty_authority_is_refused(scheme: str, userinfo: str, port: str, path: str) -> None:
    with pytest.raises(InvalidURL):
        canonicalize(f"{scheme}://{userinfo}{port}{path}")


@settings(max_examples=400)
@given(scheme=st.one_of(st.just(""), schemes.map(lambda s: s + ":")), slashes=too_many, rest=rests)
def test_a_joined_href_with_three_slashes_gets_no_host(
    scheme: str, slashes: str, rest: str
) -> None:
    assert UrlJoiner(BASE).join(f"{scheme}{slashes}{rest}") is None


@settings(max_examples=300)
@given(slashes=st.text(alphabet="/\\", min_size=0, max_size=1), rest=rests)
def test_a_scheme_relative_href_keeps_the_base_host(slashes: str, rest: str) -> None:
    """``http:path`` and ``http:/path`` in a page are relative (as browsers read them)."""
    joined = UrlJoiner(BASE).join(f"http:{slashes}{rest}")
    assert joined is None or host_of(joined) == "base.test"


@pytest.mark.parametrize(
    "url", ["http:///path", "http:/path", "http:path", "https:///a/b", "http:\\\\\\p"]
)
def test_the_reported_spellings_are_refused_with_a_message(url: str) -> None:
    with pytest.raises(InvalidURL, match="no host"):
        canonicalize(url)


def test_host_of_refuses_an_empty_authority() -> None:
    with pytest.raises(InvalidURL, match="no host"):
        host_of("http:///path")


def test_two_slashes_or_backslashes_still_parse() -> None:
    assert canonicalize("http://a.test/x") == "http://a.test/x"
    assert canonicalize("https:\\\\a.test\\b") == "https://a.test/b"
