"""The calibrated near-duplicate threshold on the sandbox: near-duplicates by construction
are found, different pages are not (docs/recrawl.md; benchmarks/simhash_calibration.py
measures the full distributions)."""

from __future__ import annotations

import itertools

import pytest

from courtly.parse.fingerprint import simhash64
from courtly.parse.near_duplicates import NearDuplicateIndex
from courtly.sandbox.near_duplicates import VARIANT_KINDS, resemblance, sandbox_texts, variant
from courtly.sandbox.spec import SandboxSpec

PAGES = 60


@pytest.fixture(scope="module")
def texts() -> list[tuple[str, str]]:
    return sandbox_texts(SandboxSpec(n_sites=12, hosts_per_site=3, pages_per_host=10), PAGES)


def test_near_duplicates_by_construction_are_found(texts: list[tuple[str, str]]) -> None:
    assert len(texts) == PAGES
    index = NearDuplicateIndex()
    for url, text in texts:
        index.add(url, simhash64(text))
    found: dict[str, int] = {}
    for number, (url, text) in enumerate(texts):
        for kind in VARIANT_KINDS:
            near = index.find(simhash64(variant(text, kind, number)))
            found[kind] = found.get(kind, 0) + (url in {u for _, u in near})
    # the calibration's figures at 300 pages: 94%, 71%, 71%, 43%, 15%, 1%
    assert found["counter"] >= 0.85 * PAGES
    assert found["sentence_added"] >= 0.5 * PAGES
    assert found["sentence_removed"] >= 0.5 * PAGES
    assert found["words_1pct"] >= 0.25 * PAGES
    assert found["words_5pct"] <= 0.1 * PAGES  # an edited page is not a near-duplicate


def test_different_pages_are_not_near_duplicates(texts: list[tuple[str, str]]) -> None:
    index = NearDuplicateIndex()
    prints = {url: simhash64(text) for url, text in texts}
    for url, fingerprint in prints.items():
        index.add(url, fingerprint)
    by_url = dict(texts)
    called = {
        tuple(sorted((url, other)))
        for url, fingerprint in prints.items()
        for _, other in index.find(fingerprint, exclude=url)
    }
    pairs = list(itertools.combinations(by_url, 2))
    # a pair of different pages is called a near-duplicate only when its prose is
    # nearly one window of the sandbox's filler (5-word shingle resemblance >= 0.8)
    for a, b in called:
        assert resemblance(by_url[a], by_url[b]) >= 0.8, (a, b)
    assert len(called) <= 0.01 * len(pairs)
