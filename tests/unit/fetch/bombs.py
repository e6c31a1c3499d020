"""Compressed payloads that expand enormously (shared by unit and integration tests)."""

from __future__ import annotations

import zlib

import brotli

MIB = 1024 * 1024


def gzip_bomb(decoded_mib: int) -> bytes:
    """A gzip stream of ``decoded_mib`` MiB of zeros (about 1000:1)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MIB)
    parts = [compressor.compress(zeros) for _ in range(decoded_mib)]
    parts.append(compressor.flush())
    return b"".join(parts)


def brotli_bomb(decoded_mib: int) -> bytes:
    """A brotli stream of ``decoded_mib`` MiB of zeros (a few hundred bytes)."""
    compressor = brotli.Compressor(quality=5)
    zeros = bytes(MIB)
    parts = [compressor.process(zeros) for _ in range(decoded_mib)]
    parts.append(compressor.finish())
    return b"".join(parts)
