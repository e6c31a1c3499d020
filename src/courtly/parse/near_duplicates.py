"""Near-duplicates across URLs: a permuted-table index of 64-bit SimHashes.

Manku, Jain & Das Sarma (WWW 2007): cut the 64 bits into ``blocks`` equal pieces; two
fingerprints at Hamming distance ≤ ``k`` differ in at most ``k`` pieces, so they agree
exactly on at least ``blocks − k`` of them. The index keeps one table per choice of
``blocks − k`` pieces (C(blocks, k) tables), keyed by those pieces' values; a lookup
probes each table with the query's key and checks the distance of the few candidates.
Tables are hash maps here rather than the paper's sorted permuted lists (the same
probes, in memory).

Defaults: ``k = 3`` (Google's threshold for 64-bit SimHash of web pages) and 4 blocks
(4 tables keyed by 16 bits: fine to about 10^5-10^6 fingerprints; 5 or 6 blocks cut
the candidates per probe for larger sets at 10 or 20 tables). Our word-3-shingle
SimHash puts near-duplicate pages about 7 bits apart and unrelated ones about 32
(docs/recrawl.md); ``k = 3`` finds the closest variants (a changed date, a counter)
and misses looser ones: tighten the features before raising ``k``.
"""

from __future__ import annotations

from itertools import combinations, pairwise

from courtly.parse.fingerprint import hamming

__all__ = ["NearDuplicateIndex"]

_BITS = 64


class NearDuplicateIndex:
    """Fingerprints of URLs; :meth:`find` returns those within ``k`` bits of a query."""

    def __init__(self, k: int = 3, blocks: int = 4) -> None:
        if not 0 <= k < blocks <= _BITS:
            raise ValueError("need 0 <= k < blocks <= 64")
        self.k = k
        edges = [round(i * _BITS / blocks) for i in range(blocks + 1)]
        self._masks = [((1 << (hi - lo)) - 1) << lo for lo, hi in pairwise(edges)]
        self._choices = list(combinations(range(blocks), blocks - k))
        self._tables: list[dict[tuple[int, ...], list[tuple[int, str]]]] = [
            {} for _ in self._choices
        ]
        self._of: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._of)

    def _keys(self, fingerprint: int) -> list[tuple[int, ...]]:
        pieces = [fingerprint & mask for mask in self._masks]
        return [tuple(pieces[i] for i in choice) for choice in self._choices]

    def add(self, url: str, fingerprint: int) -> None:
        """Index ``url`` under ``fingerprint`` (replacing its earlier one)."""
        self.remove(url)
        self._of[url] = fingerprint
        for table, key in zip(self._tables, self._keys(fingerprint), strict=True):
            table.setdefault(key, []).append((fingerprint, url))

    def remove(self, url: str) -> None:
        old = self._of.pop(url, None)
        if old is None:
            return
        for table, key in zip(self._tables, self._keys(old), strict=True):
            bucket = table[key]
            bucket.remove((old, url))
            if not bucket:
                del table[key]

    def find(self, fingerprint: int, *, exclude: str | None = None) -> list[tuple[int, str]]:
        """``(distance, url)`` of every indexed URL within ``k`` bits, nearest first."""
        found: dict[str, int] = {}
        for table, key in zip(self._tables, self._keys(fingerprint), strict=True):
            for other, url in table.get(key, ()):
                if url != exclude and url not in found:
                    distance = hamming(fingerprint, other)
                    if distance <= self.k:
                        found[url] = distance
        return sorted((d, u) for u, d in found.items())
