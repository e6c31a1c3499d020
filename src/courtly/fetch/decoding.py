"""Content-decoding (gzip, deflate, br) with a hard cap on the decoded size.

Decoding is incremental: each chunk read off the wire is fed through the
decoders at once, and no decoder is ever allowed to produce more than the bytes
left under the cap (``zlib`` ``max_length``, brotli ``output_buffer_limit``). A
decompression bomb therefore stops at the cap, however high its ratio.
"""

from __future__ import annotations

import zlib
from typing import Protocol

import brotli

__all__ = ["BodyDecoder", "parse_content_encoding"]

# zlib "wbits" that accept both a gzip and a zlib header; raw deflate is tried on failure.
_AUTO_HEADER_WBITS = 32 + zlib.MAX_WBITS
_RAW_DEFLATE_WBITS = -zlib.MAX_WBITS

_ALIASES = {"x-gzip": "gzip", "x-deflate": "deflate"}
_KNOWN = frozenset({"gzip", "deflate", "br"})


def parse_content_encoding(value: str | None) -> tuple[str, ...]:
    """The codings named by a ``Content-Encoding`` value, in the order they were applied.

    Lower-cased, aliases resolved (``x-gzip``), ``identity`` and empty items dropped.
    """
    if not value:
        return ()
    codings = []
    for item in value.split(","):
        token = item.strip().lower()
        if token and token != "identity":
            codings.append(_ALIASES.get(token, token))
    return tuple(codings)


class _Stage(Protocol):
    def feed(self, data: bytes, max_out: int) -> bytes:
        """Decode ``data``, returning at most ``max_out`` bytes (more pending means ``max_out``)."""
        ...


class _ZlibStage:
    """gzip or zlib-wrapped deflate, falling back to raw deflate when the header is wrong."""

    __slots__ = ("_head", "_obj")

    def __init__(self) -> None:
        self._obj = zlib.decompressobj(_AUTO_HEADER_WBITS)
        # Input fed before the first output byte, kept to retry as raw deflate.
        self._head: bytes | None = b""

    def feed(self, data: bytes, max_out: int) -> bytes:
        obj = self._obj
        if obj.eof:
            return b""  # trailing bytes after the end of the stream are ignored
        head = self._head
        try:
            out = obj.decompress(data, max_out)
        except zlib.error:
            if head is None:
                raise
            # Some servers send raw deflate for "deflate" (or mislabel it as gzip).
            self._head = None
            obj = self._obj = zlib.decompressobj(_RAW_DEFLATE_WBITS)
            return obj.decompress(head + data, max_out)
        if head is not None:
            self._head = None if out else head + data
        return out


class _BrotliStage:
    __slots__ = ("_obj",)

    def __init__(self) -> None:
        self._obj = brotli.Decompressor()

    def feed(self, data: bytes, max_out: int) -> bytes:
        obj = self._obj
        if obj.is_finished():
            return b""
        out: bytes = obj.process(data, output_buffer_limit=max_out)
        return out


class BodyDecoder:
    """Decode a body chunk by chunk, never holding more than ``max_decoded_bytes`` of output.

    ``codings`` are in the order they were applied (as in the header); decoding runs
    in reverse. After :meth:`feed` returns false, stop feeding: either the decoded
    size reached the cap (``too_large``) or the stream is corrupt (``failed``); in both
    cases :meth:`body` holds what decoded before that point. An unsupported coding
    sets ``failed`` at once and the body stays empty.
    """

    __slots__ = ("_chunks", "_max_decoded_bytes", "_produced", "_stages", "failed", "too_large")

    def __init__(self, codings: tuple[str, ...], max_decoded_bytes: int) -> None:
        self._max_decoded_bytes = max_decoded_bytes
        self._chunks: list[bytes] = []
        self.too_large = False
        self.failed = False
        stages: list[_Stage] = []
        for coding in reversed(codings):
            if coding not in _KNOWN:
                self.failed = True
                break
            stages.append(_BrotliStage() if coding == "br" else _ZlibStage())
        self._stages = stages
        self._produced = [0] * len(stages)

    def feed(self, data: bytes) -> bool:
        """Decode one wire chunk; false when no more input should be fed."""
        if self.failed or self.too_large:
            return False
        cap = self._max_decoded_bytes
        produced = self._produced
        try:
            for index, stage in enumerate(self._stages):
                room = cap - produced[index]
                # Ask for one byte more than fits: getting it proves the cap is exceeded.
                data = stage.feed(data, room + 1)
                if len(data) > room:
                    data = data[:room]
                    self.too_large = True
                produced[index] += len(data)
                if not data:
                    break
        except (zlib.error, brotli.error):
            self.failed = True
            return False
        if data:
            self._chunks.append(data)
        return not self.too_large

    def body(self) -> bytes:
        """The decoded bytes so far (at most ``max_decoded_bytes``)."""
        chunks = self._chunks
        if len(chunks) == 1:
            return chunks[0]
        joined = b"".join(chunks)
        self._chunks = [joined]
        return joined
