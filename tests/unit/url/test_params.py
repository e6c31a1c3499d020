"""Tracking parameters: dropped by the canonical form, adjustable, idempotent."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from courtly.errors import InvalidURL
from courtly.url import DEFAULT_PARAMS, TRACKING_PARAMS, JoinCache, UrlJoiner, canonicalize
from courtly.url.params import ParamPolicy, check_param_name
from tests.unit.url.strategies import urls


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("http://e.test/a?utm_source=news&id=3", "http://e.test/a?id=3"),
        ("http://e.test/a?id=3&utm_medium=mail&utm_campaign=x", "http://e.test/a?id=3"),
        ("http://e.test/a?UTM_Source=x", "http://e.test/a"),
        ("http://e.test/a?gclid=abc&fbclid=def&msclkid=1&yclid=2&_ga=3", "http://e.test/a"),
        ("http://e.test/a?mc_cid=1&q=x&mc_eid=2", "http://e.test/a?q=x"),
        ("http://e.test/a?b=2&utm_x=1&a=1", "http://e.test/a?b=2&a=1"),  # order kept
        ("http://e.test/a?gclid", "http://e.test/a"),  # a bare name too
        ("http://e.test/a?gclidx=1&my_utm_source=2", "http://e.test/a?gclidx=1&my_utm_source=2"),
        ("http://e.test/a?utm_source=x#frag", "http://e.test/a"),
        ("http://e.test/a?sid=abcdef012345&utm_source=x&p=2", "http://e.test/a?p=2"),
    ],
)
def test_tracking_parameters_are_dropped(url: str, canonical: str) -> None:
    assert canonicalize(url) == canonical


def test_keep_and_drop_adjust_the_default() -> None:
    policy = DEFAULT_PARAMS.adjusted(keep=("utm_*", "GCLID"), drop=("ref", "share_*"))
    url = "http://e.test/?utm_source=x&gclid=1&fbclid=2&ref=a&share_to=b&sharer=c"
    assert canonicalize(url, params=policy) == "http://e.test/?utm_source=x&gclid=1&sharer=c"
    assert not policy.drops("utm_anything") and policy.drops("share_x")
    # keep wins over a drop rule, whichever came first
    assert not DEFAULT_PARAMS.adjusted(keep=("utm_source",)).drops("utm_source")
    assert DEFAULT_PARAMS.adjusted(keep=("utm_source",)).drops("utm_medium")


def test_an_empty_policy_drops_nothing() -> None:
    url = "http://e.test/?utm_source=x&gclid=1"
    assert canonicalize(url, params=ParamPolicy(drop=frozenset())) == url


@pytest.mark.parametrize("name", ["", "a b", "a&b", "a=b", "#x", "a*b", "*"])
def test_bad_parameter_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="not a query parameter name"):
        check_param_name(name)


def test_the_joiner_drops_them_too_and_a_cache_is_shared_only_at_one_policy() -> None:
    joiner = UrlJoiner("http://e.test/d/p.html?utm_source=x")
    assert joiner.base_url == "http://e.test/d/p.html"
    assert joiner.join("q.html?fbclid=1&a=2") == "http://e.test/d/q.html?a=2"
    assert joiner.join("?utm_medium=y") == "http://e.test/d/p.html"
    keep = DEFAULT_PARAMS.adjusted(keep=("fbclid",))
    with pytest.raises(ValueError, match="params"):
        UrlJoiner("http://e.test/", cache=JoinCache(), params=keep)
    cache = JoinCache(params=keep)
    kept = UrlJoiner("http://e.test/d/", cache=cache, params=keep).join("/q?fbclid=1")
    assert kept == "http://e.test/q?fbclid=1"


_names = st.one_of(
    st.sampled_from(sorted(TRACKING_PARAMS)),
    st.sampled_from(["utm_source", "UTM_Medium", "utm_", "utm_x%41", "ref", "id", "q", "gclidx"]),
    st.text("abcxyz_%41", min_size=0, max_size=5),
)
_params = st.lists(
    st.tuples(_names, st.sampled_from(["", "=", "=1", "=a%26b", "=x=y"])).map("".join),
    max_size=6,
).map(lambda parts: "?" + "&".join(parts) if parts else "")
_policies = st.one_of(
    st.just(DEFAULT_PARAMS),
    st.builds(
        lambda keep, drop: DEFAULT_PARAMS.adjusted(keep=tuple(keep), drop=tuple(drop)),
        st.lists(st.sampled_from(["utm_*", "gclid", "ref", "id*"]), max_size=2),
        st.lists(st.sampled_from(["ref", "q", "x*", "utm_source"]), max_size=2),
    ),
)


@settings(max_examples=400, deadline=None)
@given(urls, _params, _policies)
def test_canonicalize_stays_idempotent_and_drops_every_dropped_name(
    url: str, query: str, policy: ParamPolicy
) -> None:
    url = url.partition("?")[0].partition("#")[0] + query
    try:
        canonical = canonicalize(url, params=policy)
    except InvalidURL:
        return
    assert canonicalize(canonical, params=policy) == canonical
    left = canonical.partition("?")[2]
    assert not any(policy.drops(part.partition("=")[0]) for part in left.split("&") if part)


@settings(max_examples=300, deadline=None)
@given(_params, st.sampled_from(["", "x.html", "/a/b", "//o.test/p", "http://o.test/"]), _policies)
def test_a_cached_join_is_the_uncached_join_is_canonicalize_of_the_href(
    query: str, path: str, policy: ParamPolicy
) -> None:
    href = path + query
    cache = JoinCache(max_entries=8, params=policy)
    base = "http://e.test/d/page.html"
    for _ in range(2):  # the second round answers from the cache
        cached = UrlJoiner(base, canonical=True, cache=cache, params=policy).join(href)
        assert cached == UrlJoiner(base, params=policy).join(href)
    if cached is not None:
        assert canonicalize(cached, params=policy) == cached
