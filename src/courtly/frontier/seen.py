"""The seen-set: has this canonical URL been discovered before?

:class:`SeenSet` is the seam. Two implementations:

- :class:`BloomSeenSet`, the default: a scalable Bloom filter over rbloom. No false negatives;
  false positives (a new URL taken for seen, so never crawled) at a rate of at most
  ``error_rate``, whatever the number of items. It starts with one layer sized for
  ``capacity`` items at ``error_rate / 2``; when a layer is full a new one is added with twice
  the capacity and half the error rate, so the rates sum to less than ``error_rate``
  (``error_rate/2 + error_rate/4 + ...``). Memory stays about 16 bits per item at 1e-3 (1.9 MiB
  per million URLs) instead of the rate degrading silently past capacity.
- :class:`ExactSeenSet`, the exact in-memory twin: a set of 64-bit xxh3 fingerprints (about
  70 bytes per item). Use it in tests and for small crawls.

Both persist with ``to_bytes()`` / ``from_bytes(data)``: a versioned header carries every
parameter, and a checksum guards the payload, so loading needs no arguments and bad data raises
:class:`courtly.errors.StateError`. The hashes (xxh3) are stable across processes and machines.
"""

from __future__ import annotations

import struct
import sys
from array import array
from typing import Final, Protocol, runtime_checkable

from rbloom import Bloom
from xxhash import xxh3_64_intdigest, xxh3_128_intdigest

from courtly.errors import StateError

__all__ = ["BloomSeenSet", "ExactSeenSet", "SeenSet"]


@runtime_checkable
class SeenSet(Protocol):
    """A set of canonical URLs that may answer "seen" for a URL never added (Bloom), but never
    answers "not seen" for one that was."""

    def add(self, canonical_url: str) -> bool:
        """Add ``canonical_url``; return True when it was not (believed to be) present."""
        ...

    def __contains__(self, canonical_url: object) -> bool: ...

    def __len__(self) -> int:
        """The number of URLs added that were new (``add`` returned True)."""
        ...

    def to_bytes(self) -> bytes:
        """Serialise the whole set; the class's ``from_bytes`` restores it."""
        ...


_MAGIC: Final = b"CRTLSEEN"
_VERSION: Final = 1
_KIND_BLOOM: Final = 1
_KIND_EXACT: Final = 2
# magic, version, kind, xxh3-64 of the body that follows the header
_HEADER: Final = struct.Struct("<8sBBQ")
# target error rate, first-layer capacity, count, number of layers
_BLOOM_HEAD: Final = struct.Struct("<dQQI")
# layer capacity, layer error rate, layer count, size of the saved filter in bytes
_BLOOM_LAYER: Final = struct.Struct("<QdQQ")
_EXACT_HEAD: Final = struct.Struct("<Q")

_U128: Final = 1 << 128
_I128_MAX: Final = (1 << 127) - 1


def _url_hash(canonical_url: str) -> int:
    """xxh3-128 of the UTF-8 bytes as a signed 128-bit int (the range rbloom requires)."""
    value = xxh3_128_intdigest(canonical_url.encode())
    return value - _U128 if value > _I128_MAX else value


def _identity(value: int) -> int:
    """rbloom's hash function: items are already :func:`_url_hash` values."""
    return value


def _pack(kind: int, body: bytes) -> bytes:
    return _HEADER.pack(_MAGIC, _VERSION, kind, xxh3_64_intdigest(body)) + body


def _unpack(data: bytes, kind: int, what: str) -> memoryview:
    if len(data) < _HEADER.size:
        raise StateError(f"{what}: {len(data)} bytes is too short to be a saved seen-set")
    magic, version, found_kind, checksum = _HEADER.unpack_from(data)
    if magic != _MAGIC:
        raise StateError(f"{what}: not a saved seen-set (bad magic)")
    if version != _VERSION:
        raise StateError(f"{what}: format version {version} is not supported (want {_VERSION})")
    if found_kind != kind:
        raise StateError(f"{what}: saved seen-set is of another kind ({found_kind})")
    body = memoryview(data)[_HEADER.size :]
    if xxh3_64_intdigest(body) != checksum:
        raise StateError(f"{what}: checksum mismatch, the data is corrupt")
    return body


class BloomSeenSet:
    """A scalable Bloom filter of canonical URLs (see the module docstring).

    ``capacity`` is the number of URLs the first layer holds (later layers double);
    ``error_rate`` bounds the false-positive rate over the whole set, in (0, 1).
    """

    __slots__ = ("_capacity", "_count", "_error_rate", "_layers")

    def __init__(self, capacity: int, error_rate: float = 1e-3) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        if not 0.0 < error_rate < 1.0:
            raise ValueError(f"error_rate must be in (0, 1), got {error_rate}")
        self._capacity = capacity
        self._error_rate = error_rate
        self._count = 0
        self._layers: list[_Layer] = [_Layer.new(capacity, error_rate / 2)]

    @property
    def capacity(self) -> int:
        """The capacity of the first layer (the constructor argument)."""
        return self._capacity

    @property
    def error_rate(self) -> float:
        """The bound on the false-positive rate (the constructor argument)."""
        return self._error_rate

    @property
    def layer_count(self) -> int:
        """How many layers the filter has grown to (1 until ``capacity`` is exceeded)."""
        return len(self._layers)

    @property
    def size_bytes(self) -> int:
        """Memory taken by the bit arrays, in bytes."""
        return sum(layer.bloom.size_in_bits for layer in self._layers) // 8

    def add(self, canonical_url: str) -> bool:
        """Add ``canonical_url``; True when it was not (believed to be) present."""
        key = _url_hash(canonical_url)
        for layer in self._layers:
            if key in layer.bloom:
                return False
        last = self._layers[-1]
        if last.count >= last.capacity:
            last = _Layer.new(last.capacity * 2, last.error_rate / 2)
            self._layers.append(last)
        last.bloom.add(key)
        last.count += 1
        self._count += 1
        return True

    def __contains__(self, canonical_url: object) -> bool:
        if not isinstance(canonical_url, str):
            return False
        key = _url_hash(canonical_url)
        return any(key in layer.bloom for layer in self._layers)

    def __len__(self) -> int:
        return self._count

    def to_bytes(self) -> bytes:
        """Serialise: header (parameters, count, layers) then each layer's bit array."""
        parts = [_BLOOM_HEAD.pack(self._error_rate, self._capacity, self._count, len(self._layers))]
        for layer in self._layers:
            saved = layer.bloom.save_bytes()
            parts.append(
                _BLOOM_LAYER.pack(layer.capacity, layer.error_rate, layer.count, len(saved))
            )
            parts.append(saved)
        return _pack(_KIND_BLOOM, b"".join(parts))

    @classmethod
    def from_bytes(cls, data: bytes) -> BloomSeenSet:
        """Restore a set saved by :meth:`to_bytes`; raises StateError on bad data."""
        body = _unpack(data, _KIND_BLOOM, "BloomSeenSet")
        try:
            error_rate, capacity, count, layer_total = _BLOOM_HEAD.unpack_from(body)
            offset = _BLOOM_HEAD.size
            layers: list[_Layer] = []
            for _ in range(layer_total):
                capacity_i, rate_i, count_i, size = _BLOOM_LAYER.unpack_from(body, offset)
                offset += _BLOOM_LAYER.size
                if offset + size > len(body):
                    raise StateError("BloomSeenSet: truncated layer")
                bloom = Bloom.load_bytes(bytes(body[offset : offset + size]), _identity)
                offset += size
                layers.append(_Layer(bloom, capacity_i, rate_i, count_i))
        except (struct.error, ValueError) as exc:
            raise StateError(f"BloomSeenSet: malformed data ({exc})") from exc
        if offset != len(body) or not layers or count != sum(layer.count for layer in layers):
            raise StateError("BloomSeenSet: inconsistent header")
        if capacity < 1 or not 0.0 < error_rate < 1.0:
            raise StateError("BloomSeenSet: parameters out of range")
        restored = cls.__new__(cls)
        restored._capacity = capacity
        restored._error_rate = error_rate
        restored._count = count
        restored._layers = layers
        return restored


class _Layer:
    """One fixed-size Bloom filter of a :class:`BloomSeenSet`."""

    __slots__ = ("bloom", "capacity", "count", "error_rate")

    def __init__(self, bloom: Bloom, capacity: int, error_rate: float, count: int) -> None:
        self.bloom = bloom
        self.capacity = capacity
        self.error_rate = error_rate
        self.count = count

    @classmethod
    def new(cls, capacity: int, error_rate: float) -> _Layer:
        return cls(Bloom(capacity, error_rate, hash_func=_identity), capacity, error_rate, 0)


class ExactSeenSet:
    """The exact twin: a set of xxh3-64 fingerprints of canonical URLs.

    No false positives short of a 64-bit hash collision; memory grows with the set (about
    70 bytes per URL in CPython).
    """

    __slots__ = ("_fingerprints",)

    def __init__(self) -> None:
        self._fingerprints: set[int] = set()

    def add(self, canonical_url: str) -> bool:
        """Add ``canonical_url``; True when it was not present."""
        fingerprint = xxh3_64_intdigest(canonical_url.encode())
        if fingerprint in self._fingerprints:
            return False
        self._fingerprints.add(fingerprint)
        return True

    def __contains__(self, canonical_url: object) -> bool:
        if not isinstance(canonical_url, str):
            return False
        return xxh3_64_intdigest(canonical_url.encode()) in self._fingerprints

    def __len__(self) -> int:
        return len(self._fingerprints)

    def to_bytes(self) -> bytes:
        """Serialise: header, count, then the sorted fingerprints as little-endian uint64."""
        values = array("Q", sorted(self._fingerprints))  # sorted: same set, same bytes
        if sys.byteorder == "big":
            values.byteswap()
        return _pack(_KIND_EXACT, _EXACT_HEAD.pack(len(values)) + values.tobytes())

    @classmethod
    def from_bytes(cls, data: bytes) -> ExactSeenSet:
        """Restore a set saved by :meth:`to_bytes`; raises StateError on bad data."""
        body = _unpack(data, _KIND_EXACT, "ExactSeenSet")
        if len(body) < _EXACT_HEAD.size:
            raise StateError("ExactSeenSet: truncated header")
        (count,) = _EXACT_HEAD.unpack_from(body)
        payload = body[_EXACT_HEAD.size :]
        values = array("Q")
        if len(payload) != count * values.itemsize:
            raise StateError("ExactSeenSet: size does not match the count")
        values.frombytes(payload)
        if sys.byteorder == "big":
            values.byteswap()
        restored = cls()
        restored._fingerprints = set(values)
        if len(restored._fingerprints) != count:
            raise StateError("ExactSeenSet: duplicate fingerprints, the data is corrupt")
        return restored
