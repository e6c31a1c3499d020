"""The fingerprint of a URL: a stable 64-bit hash of its canonical form."""

from __future__ import annotations

from xxhash import xxh3_64_intdigest

__all__ = ["url_fingerprint"]


def url_fingerprint(canonical_url: str) -> int:
    """Return xxh3-64 of the UTF-8 bytes of ``canonical_url``, an unsigned int below 2**64.

    Stable across processes, machines and versions (it is persisted). Pass the output of
    :func:`courtly.url.canonicalize`: two spellings of one URL only share a fingerprint once
    canonicalised.
    """
    return xxh3_64_intdigest(canonical_url.encode())
