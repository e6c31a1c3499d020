"""The permuted-table index finds exactly what a brute-force scan finds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtly.parse.fingerprint import hamming, simhash64
from courtly.parse.near_duplicates import NearDuplicateIndex

fingerprints = st.integers(0, 2**64 - 1)


@st.composite
def near(draw: st.DrawFn, base: int) -> int:
    bits = draw(st.sets(st.integers(0, 63), max_size=6))
    for bit in bits:
        base ^= 1 << bit
    return base


@given(st.data(), fingerprints, st.integers(1, 30), st.integers(0, 4), st.integers(5, 8))
def test_index_equals_brute_force(
    data: st.DataObject, base: int, n: int, k: int, blocks: int
) -> None:
    index = NearDuplicateIndex(k=k, blocks=blocks)
    stored = {f"u{i}": data.draw(st.one_of(near(base), fingerprints)) for i in range(n)}
    for url, fp in stored.items():
        index.add(url, fp)
    query = data.draw(near(base))
    expected = sorted(
        (hamming(query, fp), url) for url, fp in stored.items() if hamming(query, fp) <= k
    )
    assert index.find(query) == expected


@given(fingerprints, fingerprints)
def test_replacing_and_removing_a_url(first: int, second: int) -> None:
    index = NearDuplicateIndex()
    index.add("a", first)
    index.add("a", second)
    assert len(index) == 1 and index.find(second) == [(0, "a")]
    assert index.find(second, exclude="a") == []
    index.remove("a")
    assert len(index) == 0 and index.find(second) == []


def test_a_page_with_a_changed_date_is_a_near_duplicate_an_unrelated_one_is_not() -> None:
    words = " ".join(f"word{i}" for i in range(400))
    page = simhash64(f"{words} updated 2026-12-01")
    variant = simhash64(f"{words} updated 2026-12-02")
    other = simhash64(" ".join(f"other{i}" for i in range(400)))
    index = NearDuplicateIndex()
    index.add("http://a/", page)
    index.add("http://b/", other)
    assert [url for _, url in index.find(variant)] == ["http://a/"]


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError):
        NearDuplicateIndex(k=4, blocks=4)
