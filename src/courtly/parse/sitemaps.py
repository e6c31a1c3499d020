"""Sitemaps: XML ``urlset`` and ``sitemapindex``, RSS/Atom feeds, plain text; gzip or not.

Contract: :func:`parse_sitemap` never raises on any input. Whatever could be read
before a problem is returned; ``error`` says what went wrong, ``truncated`` says
a limit (``max_bytes`` of decompressed input or ``max_urls`` entries) stopped
the read early. Both limits bound memory and time whatever the input.

Safety choices:

* **Gzip** is recognised by its magic number (``1f 8b``), not by file name or
  header. Decompression is streamed with ``zlib.decompressobj(...).decompress(
  data, max_length)`` so at most ``max_bytes`` are ever produced: a gzip bomb
  costs ``max_bytes`` of work, not memory. Concatenated members are read.
* **XML** is parsed with the standard library's expat, driven directly, with
  any document type declaration refused (``<!DOCTYPE`` aborts the parse with
  ``error="DTD not allowed"``). Without a DTD there are no entity declarations,
  so neither external entities (XXE) nor entity expansion ("billion laughs")
  are possible; an undefined entity reference is a parse error. This is the
  same rule as ``defusedxml``'s ``forbid_dtd``, without the dependency.
  Real sitemaps never carry a DTD.
* **Namespaces** are ignored: elements are matched by local name (the part after
  any ``prefix:``), so sitemaps with a missing, wrong or extra namespace (and
  undeclared prefixes such as ``image:``) still parse.

Only http(s) ``loc`` values of at most 2,048 characters are kept; a sitemap may
legally list URLs of other hosts, scope is the caller's business.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal
from xml.parsers import expat

__all__ = [
    "DEFAULT_MAX_SITEMAP_BYTES",
    "DEFAULT_MAX_SITEMAP_URLS",
    "Sitemap",
    "SitemapKind",
    "SitemapUrl",
    "parse_sitemap",
]

DEFAULT_MAX_SITEMAP_BYTES = 50 * 1024 * 1024
DEFAULT_MAX_SITEMAP_URLS = 50_000
MAX_LOC_CHARS = 2048
_CHUNK_BYTES = 1 << 20
_MAX_FIELD_CHARS = 4096
_CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})
_GZIP_MAGIC = b"\x1f\x8b"

SitemapKind = Literal["urlset", "sitemapindex", "rss", "atom", "text", "unknown"]
_ROOT_KINDS: dict[str, SitemapKind] = {
    "urlset": "urlset",
    "sitemapindex": "sitemapindex",
    "rss": "rss",
    "feed": "atom",
}


@dataclass(frozen=True, slots=True)
class SitemapUrl:
    """One ``<url>`` entry.

    ``lastmod`` is the W3C datetime as written (not validated); ``changefreq``
    is one of the protocol's words or ``None``; ``priority`` is in [0, 1] or ``None``.
    """

    loc: str
    lastmod: str | None = None
    changefreq: str | None = None
    priority: float | None = None


@dataclass(frozen=True, slots=True)
class Sitemap:
    """A parsed sitemap: page ``urls`` (urlset, feed, text) or child ``sitemaps`` (index)."""

    urls: tuple[SitemapUrl, ...] = ()
    sitemaps: tuple[str, ...] = ()
    kind: SitemapKind = "unknown"
    truncated: bool = False
    error: str | None = None


class _Stop(Exception):
    """Raised inside expat handlers to end the parse (limit reached or forbidden construct)."""

    def __init__(self, reason: str | None) -> None:
        super().__init__(reason)
        self.reason = reason


def _valid_loc(text: str) -> str | None:
    loc = text.strip()
    if not loc or len(loc) > MAX_LOC_CHARS:
        return None
    if not loc[:8].lower().startswith(("http://", "https://")):
        return None
    return loc


def _priority(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


class _Inflate:
    """Yields the decompressed input in chunks, at most ``max_bytes`` in total."""

    def __init__(self, body: bytes, max_bytes: int) -> None:
        self._body = body
        self._max_bytes = max(0, max_bytes)
        self.truncated = False
        self.error: str | None = None

    def chunks(self) -> Iterator[bytes]:
        if self._body.startswith(_GZIP_MAGIC):
            yield from self._gunzip()
            return
        if len(self._body) > self._max_bytes:
            self.truncated = True
        data = memoryview(self._body)[: self._max_bytes]
        for start in range(0, len(data), _CHUNK_BYTES):
            yield bytes(data[start : start + _CHUNK_BYTES])

    def _gunzip(self) -> Iterator[bytes]:
        budget = self._max_bytes
        pending = self._body
        while pending:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            data = pending
            pending = b""
            while True:
                try:
                    out = inflater.decompress(data, min(_CHUNK_BYTES, budget + 1))
                except zlib.error as exc:
                    self.error = f"corrupt gzip data: {exc}"
                    return
                if len(out) > budget:
                    out = out[:budget]
                    self.truncated = True
                if out:
                    budget -= len(out)
                    yield out
                if self.truncated:
                    return
                if inflater.eof:
                    pending = inflater.unused_data
                    if not pending.startswith(_GZIP_MAGIC):
                        return  # trailing garbage after the last member is ignored
                    break
                data = inflater.unconsumed_tail
                if not data and not out:
                    self.error = "gzip stream ended early"
                    return


class _XmlSitemapReader:
    """Expat handlers collecting entries of a urlset, sitemapindex, RSS or Atom document."""

    def __init__(self, max_urls: int) -> None:
        self.max_urls = max(0, max_urls)
        self.kind: SitemapKind = "unknown"
        self.urls: list[SitemapUrl] = []
        self.sitemaps: list[str] = []
        self.truncated = False
        self._stack: list[str] = []
        self._field: str | None = None
        self._text: list[str] = []
        self._text_chars = 0
        self._entry: dict[str, str] = {}
        self.parser = expat.ParserCreate()
        self.parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        self.parser.buffer_text = True
        self.parser.StartDoctypeDeclHandler = self._doctype
        self.parser.EntityDeclHandler = self._entity
        self.parser.StartElementHandler = self._start
        self.parser.EndElementHandler = self._end
        self.parser.CharacterDataHandler = self._chars

    @staticmethod
    def _doctype(*_args: object) -> None:
        raise _Stop("DTD not allowed")

    @staticmethod
    def _entity(*_args: object) -> None:
        raise _Stop("entity declarations not allowed")

    def _entry_name(self) -> str:
        return {"urlset": "url", "sitemapindex": "sitemap", "rss": "item", "atom": "entry"}.get(
            self.kind, ""
        )

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        local = name.rpartition(":")[2].lower()
        depth = len(self._stack)
        self._stack.append(local)
        if depth == 0:
            self.kind = _ROOT_KINDS.get(local, "unknown")
            if self.kind == "unknown":
                raise _Stop(f"not a sitemap: root element <{local}>")
            return
        if local == self._entry_name():
            self._entry = {}
        elif depth >= 2 and self._stack[-2] == self._entry_name():
            if self.kind == "atom":
                if local == "link" and attrs.get("rel", "alternate") == "alternate":
                    self._entry.setdefault("loc", attrs.get("href", ""))
                return
            field = "loc" if (self.kind == "rss" and local == "link") else local
            if field in ("loc", "lastmod", "changefreq", "priority"):
                self._field = field
                self._text = []
                self._text_chars = 0

    def _chars(self, data: str) -> None:
        if self._field is not None and self._text_chars < _MAX_FIELD_CHARS:
            self._text.append(data)
            self._text_chars += len(data)

    def _end(self, name: str) -> None:
        local = self._stack.pop() if self._stack else ""
        if self._field is not None:
            if self._text_chars <= _MAX_FIELD_CHARS:
                self._entry.setdefault(self._field, "".join(self._text))
            self._field = None
        if local == self._entry_name() and len(self._stack) >= 1:
            self._emit()

    def _emit(self) -> None:
        loc = _valid_loc(self._entry.get("loc", ""))
        entry, self._entry = self._entry, {}
        if loc is None:
            return
        if len(self.urls) + len(self.sitemaps) >= self.max_urls:
            self.truncated = True
            raise _Stop(None)
        if self.kind == "sitemapindex":
            self.sitemaps.append(loc)
            return
        lastmod = (entry.get("lastmod") or "").strip()[:64] or None
        changefreq = (entry.get("changefreq") or "").strip().lower()
        self.urls.append(
            SitemapUrl(
                loc=loc,
                lastmod=lastmod,
                changefreq=changefreq if changefreq in _CHANGEFREQS else None,
                priority=_priority(entry.get("priority")),
            )
        )


def _parse_xml(chunks: Iterator[bytes], max_urls: int) -> tuple[_XmlSitemapReader, str | None]:
    reader = _XmlSitemapReader(max_urls)
    try:
        for chunk in chunks:
            reader.parser.Parse(chunk, False)
        reader.parser.Parse(b"", True)
    except _Stop as stop:
        return reader, stop.reason
    except expat.ExpatError as exc:
        return reader, f"malformed XML: {exc}"
    except (ValueError, LookupError, UnicodeError, RecursionError) as exc:
        return reader, f"unreadable XML: {exc}"
    return reader, None


def _parse_text(chunks: Iterator[bytes], max_urls: int) -> tuple[list[SitemapUrl], bool]:
    urls: list[SitemapUrl] = []
    carry = b""
    skipping = False  # inside an over-long line
    limit = max(0, max_urls)
    at_start = True
    for chunk in chunks:
        if at_start:
            chunk = chunk.removeprefix(b"\xef\xbb\xbf")
            at_start = False
        lines = (carry + chunk).split(b"\n")
        carry = lines.pop()
        for line in lines:
            if skipping:
                skipping = False
                continue
            loc = _valid_loc(line.decode("utf-8", errors="replace"))
            if loc is None:
                continue
            if len(urls) >= limit:
                return urls, True
            urls.append(SitemapUrl(loc=loc))
        if len(carry) > MAX_LOC_CHARS * 4:
            carry = b""
            skipping = True
    if carry and not skipping:
        loc = _valid_loc(carry.decode("utf-8", errors="replace"))
        if loc is not None:
            if len(urls) >= limit:
                return urls, True
            urls.append(SitemapUrl(loc=loc))
    return urls, False


def _peek(chunks: Iterator[bytes]) -> tuple[bytes, Iterator[bytes]]:
    """The first non-blank bytes of the stream, and the whole stream again."""
    seen: list[bytes] = []
    for chunk in chunks:
        seen.append(chunk)
        stripped = b"".join(seen).lstrip(b"\xef\xbb\xbf \t\r\n")
        if stripped:
            break

    def replay() -> Iterator[bytes]:
        yield from seen
        yield from chunks

    first = b"".join(seen).removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    return first[:16], replay()


def parse_sitemap(
    body: bytes,
    *,
    max_bytes: int = DEFAULT_MAX_SITEMAP_BYTES,
    max_urls: int = DEFAULT_MAX_SITEMAP_URLS,
) -> Sitemap:
    """Parse a sitemap body (as fetched: gzip is detected and inflated here). Never raises.

    ``max_bytes`` bounds the decompressed bytes read; ``max_urls`` bounds the
    entries kept (``urls`` plus ``sitemaps``). See the module docstring for the
    formats and safety rules.
    """
    inflate = _Inflate(body, max_bytes)
    first, chunks = _peek(inflate.chunks())
    if not first:
        return Sitemap(
            truncated=inflate.truncated, error=inflate.error or "empty sitemap", kind="unknown"
        )
    if first.startswith((b"<", b"\xff\xfe", b"\xfe\xff")):
        reader, error = _parse_xml(chunks, max_urls)
        return Sitemap(
            urls=tuple(reader.urls),
            sitemaps=tuple(reader.sitemaps),
            kind=reader.kind,
            truncated=reader.truncated or inflate.truncated,
            error=inflate.error or error,
        )
    urls, hit_limit = _parse_text(chunks, max_urls)
    return Sitemap(
        urls=tuple(urls),
        kind="text",
        truncated=hit_limit or inflate.truncated,
        error=inflate.error,
    )
