"""Hypothesis properties: parsing never raises; the indexed matcher equals simple oracles."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from courtly.robots import parse
from courtly.robots.normalize import normalize_path, path_of
from courtly.robots.pattern import RuleMatcher, compile_rule

FIELDS = [b"User-agent", b"Allow", b"Disallow", b"Sitemap", b"Crawl-delay", b"useragent", b"x"]


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=2_000), url=st.text(max_size=200), agent=st.text(max_size=40))
def test_arbitrary_bytes_never_raise(data: bytes, url: str, agent: str) -> None:
    rules = parse(data)
    assert isinstance(rules.allowed(url, agent), bool)
    delay_s = rules.crawl_delay_s(agent)
    assert delay_s is None or delay_s >= 0
    assert all(isinstance(sitemap, str) for sitemap in rules.sitemaps)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(
        st.tuples(
            st.sampled_from(FIELDS),
            st.sampled_from([b":", b" ", b"", b" : "]),
            st.binary(max_size=30),
            st.sampled_from([b"\n", b"\r", b"\r\n", b""]),
        ),
        max_size=30,
    ),
    url=st.text(max_size=100),
)
def test_structured_garbage_never_raises(
    lines: list[tuple[bytes, bytes, bytes, bytes]], url: str
) -> None:
    rules = parse(b"".join(b"".join(parts) for parts in lines))
    assert isinstance(rules.allowed(url, "courtly/0.1"), bool)
    assert isinstance(rules.allowed(url, "x"), bool)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=500), limit_bytes=st.integers(min_value=0, max_value=600))
def test_arbitrary_text_and_limits_never_raise(text: str, limit_bytes: int) -> None:
    rules = parse(text, limit_bytes=limit_bytes)
    assert isinstance(rules.allowed("/" + text[:50], "courtly"), bool)


ALPHABET = "ab/.-"
pattern_bodies = st.text(alphabet=ALPHABET + "*", max_size=10)
patterns = st.tuples(st.sampled_from(["/", "*"]), pattern_bodies, st.booleans()).map(
    lambda parts: parts[0] + parts[1] + ("$" if parts[2] else "")
)
paths = st.text(alphabet=ALPHABET, max_size=14).map(lambda body: "/" + body)


def _regex_oracle(pattern: str, path: str) -> bool:
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    regex = ".*".join(re.escape(piece) for piece in body.split("*"))
    found = re.match(regex + ("$" if anchored else ""), path, flags=re.DOTALL)
    return found is not None


@settings(max_examples=500, deadline=None)
@given(pattern=patterns, path=paths)
def test_wildcard_matching_equals_a_regex_oracle(pattern: str, path: str) -> None:
    rule = compile_rule(pattern, allow=False)
    assert rule is not None
    assert rule.matches(path) == _regex_oracle(pattern, path)


@settings(max_examples=300, deadline=None)
@given(
    rules=st.lists(st.tuples(patterns, st.booleans()), max_size=25),
    probes=st.lists(paths, min_size=1, max_size=10),
)
def test_indexed_lookup_equals_a_linear_scan(
    rules: list[tuple[str, bool]], probes: list[str]
) -> None:
    compiled = [compile_rule(pattern, allow=allow) for pattern, allow in rules]
    present = [rule for rule in compiled if rule is not None]
    matcher = RuleMatcher(present)
    for path in probes:
        expected = max((rule.key for rule in present if rule.matches(path)), default=-1)
        assert matcher.best_key(path) == expected


@settings(max_examples=200, deadline=None)
@given(url=st.text(max_size=80))
def test_normalised_paths_are_ascii_and_idempotent(url: str) -> None:
    path = normalize_path(path_of(url))
    assert path.startswith("/")
    assert path.isascii()
    assert "*" not in path
    assert "$" not in path
    assert "#" not in path
    assert normalize_path(path) == path
