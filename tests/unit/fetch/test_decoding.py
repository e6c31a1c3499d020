from __future__ import annotations

import gzip
import tracemalloc
import zlib
from collections.abc import Callable

import brotli
import pytest

from courtly.fetch.decoding import BodyDecoder, parse_content_encoding

from .bombs import MIB, brotli_bomb, gzip_bomb

PAYLOAD = b"<html><body>" + b"<p>courtly decodes this</p>\n" * 2000 + b"</body></html>"


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


ENCODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
}


def _feed_in_chunks(decoder: BodyDecoder, data: bytes, size: int) -> None:
    for start in range(0, len(data), size):
        if not decoder.feed(data[start : start + size]):
            break


@pytest.mark.parametrize(
    ("header", "codings"),
    [
        (None, ()),
        ("", ()),
        ("identity", ()),
        ("GZIP", ("gzip",)),
        ("x-gzip", ("gzip",)),
        ("gzip, br", ("gzip", "br")),
        (" deflate ,identity", ("deflate",)),
        ("zstd", ("zstd",)),
    ],
)
def test_parse_content_encoding(header: str | None, codings: tuple[str, ...]) -> None:
    assert parse_content_encoding(header) == codings


@pytest.mark.parametrize("coding", sorted(ENCODERS))
@pytest.mark.parametrize("chunk_size", [1, 7, 4096, 10**7])
def test_round_trip_in_any_chunking(coding: str, chunk_size: int) -> None:
    decoder = BodyDecoder((coding,), 10 * MIB)
    _feed_in_chunks(decoder, ENCODERS[coding](PAYLOAD), chunk_size)
    assert decoder.body() == PAYLOAD
    assert not decoder.too_large and not decoder.failed


@pytest.mark.parametrize("chunk_size", [1, 3, 1000])
def test_raw_deflate_is_accepted(chunk_size: int) -> None:
    decoder = BodyDecoder(("deflate",), 10 * MIB)
    _feed_in_chunks(decoder, _raw_deflate(PAYLOAD), chunk_size)
    assert decoder.body() == PAYLOAD
    assert not decoder.failed


def test_stacked_codings_decode_in_reverse() -> None:
    wire = brotli.compress(gzip.compress(PAYLOAD))
    decoder = BodyDecoder(("gzip", "br"), 10 * MIB)
    _feed_in_chunks(decoder, wire, 100)
    assert decoder.body() == PAYLOAD


@pytest.mark.parametrize("coding", sorted(ENCODERS))
def test_output_stops_exactly_at_the_cap(coding: str) -> None:
    cap = 1000
    decoder = BodyDecoder((coding,), cap)
    assert decoder.feed(ENCODERS[coding](PAYLOAD)) is False
    assert decoder.too_large
    assert decoder.body() == PAYLOAD[:cap]


@pytest.mark.parametrize("coding", sorted(ENCODERS))
def test_a_body_of_exactly_the_cap_is_not_too_large(coding: str) -> None:
    decoder = BodyDecoder((coding,), len(PAYLOAD))
    _feed_in_chunks(decoder, ENCODERS[coding](PAYLOAD), 512)
    assert decoder.body() == PAYLOAD
    assert not decoder.too_large


@pytest.mark.parametrize("bomb", [gzip_bomb, brotli_bomb], ids=["gzip", "br"])
def test_a_bomb_never_allocates_beyond_the_cap(bomb: Callable[[int], bytes]) -> None:
    wire = bomb(128)  # 128 MiB once decoded
    cap = 1 * MIB
    tracemalloc.start()
    try:
        decoder = BodyDecoder(("br",) if bomb is brotli_bomb else ("gzip",), cap)
        _feed_in_chunks(decoder, wire, 64 * 1024)
        body = decoder.body()
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoder.too_large
    assert len(body) == cap
    assert peak_bytes < 4 * cap  # nowhere near the 128 MiB the bomb expands to


def test_corrupt_stream_fails_and_keeps_what_decoded() -> None:
    wire = bytearray(gzip.compress(PAYLOAD))
    wire[-8:-4] = bytes(4)  # a wrong CRC-32 in the trailer
    decoder = BodyDecoder(("gzip",), 10 * MIB)
    _feed_in_chunks(decoder, bytes(wire), 64)
    assert decoder.failed
    assert PAYLOAD.startswith(decoder.body())
    assert decoder.feed(b"more") is False


def test_garbage_is_a_failure_not_a_crash() -> None:
    for coding in ENCODERS:
        decoder = BodyDecoder((coding,), MIB)
        decoder.feed(b"this is not compressed at all, not even a little" * 10)
        assert decoder.failed, coding


def test_unsupported_coding_fails_at_once() -> None:
    decoder = BodyDecoder(("zstd",), MIB)
    assert decoder.failed
    assert decoder.feed(b"abc") is False
    assert decoder.body() == b""


def test_trailing_bytes_after_the_stream_are_ignored() -> None:
    decoder = BodyDecoder(("gzip",), MIB)
    decoder.feed(gzip.compress(PAYLOAD) + b"\0\0junk")
    assert decoder.body() == PAYLOAD
    assert not decoder.failed
