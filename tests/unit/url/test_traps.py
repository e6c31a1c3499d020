from __future__ import annotations

import pytest

from courtly.errors import ConfigError
from courtly.url import MAX_URL_LENGTH, TrapConfig, trap_reason

CFG = TrapConfig()


def test_defaults() -> None:
    assert (CFG.max_path_depth, CFG.max_repeated_segment, CFG.max_query_params) == (16, 3, 12)
    assert CFG.max_url_length == MAX_URL_LENGTH


@pytest.mark.parametrize(
    "url",
    [
        "http://e.com/",
        "http://e.com/" + "/".join(f"s{i}" for i in range(16)),
        "http://e.com/a/b/a/b/a/b",  # three of each: still allowed
        "http://e.com/p?" + "&".join(f"k{i}=v" for i in range(12)),
        "http://e.com/p?a=1&&&&&&&&&&&&&&&&&&&&b=2",  # empty parameters do not count
        "http://e.com:8080/x//y",
    ],
)
def test_clean_urls_pass(url: str) -> None:
    assert trap_reason(url, CFG) is None


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://e.com/" + "a" * MAX_URL_LENGTH, "url_too_long"),
        ("http://e.com/" + "/".join(f"s{i}" for i in range(17)), "path_too_deep"),
        ("http://e.com/cal/2024/cal/2025/cal/2026/cal/2027", "repeated_segments"),
        ("http://e.com/a/a/a/a", "repeated_segments"),
        ("http://e.com/p?" + "&".join(f"k{i}=v" for i in range(13)), "query_explosion"),
    ],
)
def test_each_reason(url: str, reason: str) -> None:
    assert trap_reason(url, CFG) == reason


def test_limits_are_configurable_and_checked_in_order() -> None:
    tight = TrapConfig(
        max_path_depth=2, max_repeated_segment=1, max_query_params=1, max_url_length=40
    )
    assert trap_reason("http://e.com/a/b", tight) is None
    assert trap_reason("http://e.com/a/b/c", tight) == "path_too_deep"
    assert trap_reason("http://e.com/a/a", tight) == "repeated_segments"
    assert trap_reason("http://e.com/a?x=1&y=2", tight) == "query_explosion"
    assert trap_reason("http://e.com/a/b/c/a?x=1&y=2&z=3&w=4&v=5&u=6", tight) == "url_too_long"
    # The query does not count toward path depth, nor the authority.
    assert trap_reason("http://a.b.c.d.e.com/a?x=/y/z/w", tight) is None


@pytest.mark.parametrize(
    "field", ["max_path_depth", "max_repeated_segment", "max_query_params", "max_url_length"]
)
def test_bad_limits(field: str) -> None:
    with pytest.raises(ConfigError):
        TrapConfig(**{field: 0})
