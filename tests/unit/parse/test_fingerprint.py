from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from xxhash import xxh3_64_intdigest

from courtly.parse import content_hash, hamming, simhash64


def _words(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    vocabulary = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(2000)
    ]
    return [rng.choice(vocabulary) for _ in range(count)]


def test_content_hash_is_xxh3_64() -> None:
    body = b"<html>same</html>"
    assert content_hash(body) == xxh3_64_intdigest(body)
    assert content_hash(body) != content_hash(body + b" ")
    assert 0 <= content_hash(b"") < 2**64


def test_near_duplicates_are_closer_than_unrelated_pages() -> None:
    base = _words(1, 1500)
    near = list(base)
    rng = random.Random(2)
    for index in rng.sample(range(len(near)), 30):  # 2% of words changed
        near[index] = "changed"
    unrelated = _words(3, 1500)
    a, b, c = (simhash64(" ".join(words)) for words in (base, near, unrelated))
    assert hamming(a, b) < 10
    assert hamming(a, c) > 20
    assert hamming(a, b) < hamming(a, c)


def test_simhash_ignores_case_and_punctuation_but_not_word_order() -> None:
    text = " ".join(_words(4, 300))
    assert simhash64(text) == simhash64(text.upper())
    assert simhash64(text) == simhash64(text.replace(" ", " ,  "))
    assert simhash64(text) != simhash64(" ".join(reversed(text.split())))


def test_short_texts() -> None:
    assert simhash64("") == 0
    assert simhash64("   ... !!! ") == 0
    assert simhash64("one") != 0
    assert simhash64("one two") != simhash64("two one")
    assert simhash64("one two three") == simhash64("One, two: THREE.")


def test_hamming() -> None:
    assert hamming(0, 0) == 0
    assert hamming(0, 2**64 - 1) == 64
    assert hamming(0b1011, 0b0001) == 2


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=500))
def test_simhash_is_a_64_bit_unsigned_int(text: str) -> None:
    value = simhash64(text)
    assert 0 <= value < 2**64
    assert simhash64(text) == value
