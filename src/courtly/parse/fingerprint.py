"""Content fingerprints: an exact hash of the bytes and a 64-bit SimHash of the text.

``content_hash`` (xxh3-64 of the payload) answers "did this page change at all?";
``simhash64`` answers "is this page nearly the same as that one?": pages whose
fingerprints differ in few bits (``hamming``; 0-3 of 64 for near-duplicates of
ordinary length) share most of their word 3-shingles.

Both return unsigned 64-bit ints (0 ≤ x < 2**64). A store that keeps them in a
signed 64-bit column converts with ``x - 2**64 if x >= 2**63 else x``.

SimHash recipe: lower-case, words = ``\\w+`` runs (Unicode), features = every
run of 3 consecutive words (texts of 1-2 words use the whole text as the one
feature; no words gives 0). Each word is hashed once with xxh3-64; a shingle's
hash mixes its three word hashes with distinct odd multipliers (so order
matters) and a 64-bit finaliser. Every feature votes on every bit; a bit is set
when more than half of the features have it. Features are counted with
multiplicity. The vote is vectorised with numpy (~10× a pure-Python loop).
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt
from xxhash import xxh3_64_intdigest

__all__ = ["content_hash", "hamming", "simhash64"]

_WORD = re.compile(r"\w+")
_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xC2B2AE3D27D4EB4F)
_M3 = np.uint64(0x165667B19E3779F9)
_F1 = np.uint64(0xFF51AFD7ED558CCD)
_F2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
_S1 = np.uint64(1)


def content_hash(body: bytes) -> int:
    """xxh3-64 of ``body`` as an unsigned 64-bit int (same bytes, same hash)."""
    return xxh3_64_intdigest(body)


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two 64-bit fingerprints (0..64)."""
    return ((a ^ b) & 0xFFFF_FFFF_FFFF_FFFF).bit_count()


def _shingle_hashes(words: list[str]) -> npt.NDArray[np.uint64]:
    count = len(words)
    word_hashes = np.fromiter(
        (xxh3_64_intdigest(word.encode()) for word in words), dtype=np.uint64, count=count
    )
    with np.errstate(over="ignore"):
        mixed: npt.NDArray[np.uint64] = (
            (word_hashes[:-2] * _M1) ^ ((word_hashes[1:-1] * _M2) >> _S1) ^ (word_hashes[2:] * _M3)
        )
        mixed ^= mixed >> _S33
        mixed *= _F1
        mixed ^= mixed >> _S33
        mixed *= _F2
        mixed ^= mixed >> _S33
    return mixed


def simhash64(text: str) -> int:
    """64-bit SimHash of ``text`` over word 3-shingles (module docstring); 0 for no words."""
    words = _WORD.findall(text.lower())
    if not words:
        return 0
    if len(words) < 3:
        features = np.array([xxh3_64_intdigest(" ".join(words).encode())], dtype=np.uint64)
    else:
        features = _shingle_hashes(words)
    little_endian = features.astype("<u8", copy=False)
    bits = np.unpackbits(little_endian.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    votes = bits.sum(axis=0, dtype=np.int64) * 2 - len(features)
    packed = np.packbits(votes > 0, bitorder="little")
    return int.from_bytes(packed.tobytes(), "little")
