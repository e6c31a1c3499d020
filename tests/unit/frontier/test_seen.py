from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from courtly.errors import StateError
from courtly.frontier.seen import BloomSeenSet, ExactSeenSet, SeenSet

Factory = Callable[[], SeenSet]
Loader = Callable[[bytes], SeenSet]


def _kinds(capacity: int) -> list[object]:
    """(factory, loader) pairs for both implementations; Bloom with a small first layer."""
    return [
        pytest.param(lambda: BloomSeenSet(capacity), BloomSeenSet.from_bytes, id="bloom"),
        pytest.param(ExactSeenSet, ExactSeenSet.from_bytes, id="exact"),
    ]


def _urls(prefix: str, count: int) -> list[str]:
    return [f"https://h{i % 101}.example/{prefix}/{i}?q={i * 7}" for i in range(count)]


def _false_positive_rate(seen: SeenSet, probes: int = 100_000) -> float:
    return sum(url in seen for url in _urls("absent", probes)) / probes


@pytest.mark.parametrize(("make", "load"), _kinds(1000))
def test_add_reports_new_and_len_counts_new(make: Factory, load: Loader) -> None:
    seen = make()
    assert isinstance(seen, SeenSet)
    assert seen.add("http://example.com/") is True
    assert seen.add("http://example.com/") is False
    assert seen.add("http://example.com/a") is True
    assert len(seen) == 2
    assert "http://example.com/a" in seen
    assert "http://example.com/b" not in seen
    assert 42 not in seen
    assert "http://example.com/a" in load(seen.to_bytes())


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=80), max_size=300))
def test_no_false_negatives(items: list[str]) -> None:
    bloom = BloomSeenSet(capacity=50, error_rate=0.01)  # small: growth happens too
    exact = ExactSeenSet()
    for item in items:
        bloom.add(item)
        exact.add(item)
    assert all(item in bloom for item in items)
    assert all(item in exact for item in items)
    assert len(exact) == len(set(items))
    assert len(bloom) <= len(exact)  # a false positive may make an add look old
    restored = BloomSeenSet.from_bytes(bloom.to_bytes())
    assert all(item in restored for item in items)


def test_false_positive_rate_within_twice_the_target() -> None:
    target = 1e-3
    seen = BloomSeenSet(capacity=100_000, error_rate=target)
    for url in _urls("present", 100_000):
        seen.add(url)
    assert seen.layer_count == 1
    assert len(seen) >= 100_000 * (1 - 2 * target)
    assert _false_positive_rate(seen) <= 2 * target


def test_growth_beyond_capacity_keeps_the_rate_bounded() -> None:
    target = 1e-2
    seen = BloomSeenSet(capacity=2_000, error_rate=target)
    for url in _urls("present", 30_000):  # 15 times the first layer's capacity
        seen.add(url)
    assert seen.layer_count > 1
    assert _false_positive_rate(seen, 50_000) <= 2 * target
    # A plain filter of the same first size, overfilled, would be far worse: the growth is real.
    assert seen.size_bytes > BloomSeenSet(capacity=2_000, error_rate=target).size_bytes * 10


@pytest.mark.parametrize(("make", "load"), _kinds(500))
def test_round_trip_to_and_from_bytes(make: Factory, load: Loader) -> None:
    seen = make()
    urls = _urls("present", 2_000)  # grows the Bloom filter to several layers
    for url in urls:
        seen.add(url)
    data = seen.to_bytes()
    restored = load(data)
    assert len(restored) == len(seen)
    assert all(url in restored for url in urls)
    assert restored.to_bytes() == data
    assert restored.add(urls[0]) is False
    assert restored.add("http://new.example/") is True
    absent = _urls("absent", 1_000)
    assert [url in restored for url in absent] == [url in seen for url in absent]


def test_bloom_parameters_survive_the_round_trip() -> None:
    seen = BloomSeenSet(capacity=100, error_rate=0.02)
    for url in _urls("p", 250):
        seen.add(url)
    restored = BloomSeenSet.from_bytes(seen.to_bytes())
    assert (restored.capacity, restored.error_rate) == (100, 0.02)
    assert restored.layer_count == seen.layer_count == 2
    assert restored.size_bytes == seen.size_bytes


def _corruptions(data: bytes) -> list[bytes]:
    middle = len(data) // 2
    return [
        b"",
        data[:10],
        data[:-1],
        data + b"\x00",
        b"XXXXXXXX" + data[8:],  # magic
        data[:8] + b"\x63" + data[9:],  # version
        data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :],  # payload bit flip
    ]


@pytest.mark.parametrize(("make", "load"), _kinds(100))
def test_corrupt_bytes_raise_state_error(make: Factory, load: Loader) -> None:
    seen = make()
    for url in _urls("p", 50):
        seen.add(url)
    for bad in _corruptions(seen.to_bytes()):
        with pytest.raises(StateError):
            load(bad)


def test_kinds_are_not_interchangeable() -> None:
    with pytest.raises(StateError, match="kind"):
        ExactSeenSet.from_bytes(BloomSeenSet(10).to_bytes())
    with pytest.raises(StateError, match="kind"):
        BloomSeenSet.from_bytes(ExactSeenSet().to_bytes())


def test_bad_parameters() -> None:
    with pytest.raises(ValueError):
        BloomSeenSet(0)
    with pytest.raises(ValueError):
        BloomSeenSet(10, error_rate=0.0)
    with pytest.raises(ValueError):
        BloomSeenSet(10, error_rate=1.0)
