"""Links, ``<base>``, canonical, title and page-level robots directives from one HTML parse.

The parser is Lexbor (selectolax), which builds the tree the way a browser does:
links inside comments, ``<script>``, ``<style>`` and ``<textarea>`` never appear,
entities in attributes are decoded, broken markup is repaired. The HTML5
"reconstruct the active formatting elements" rule clones an unclosed ``<a>``
into following blocks, so links are de-duplicated by resolved URL.

Resolution: hrefs are resolved against the first ``<base href>`` (itself
resolved against the page URL; ignored unless it yields an http(s) URL), else
against the page URL. Leading/trailing whitespace is stripped and tab/CR/LF
removed as browsers do; fragment-only hrefs (``#top``) are same-document
references and dropped; fragments are cut before resolving (they never reach a
server); only http(s) results with a host are kept. By default the join is yarl's
(the base parsed once per page) with ada's WHATWG join as fallback when yarl
refuses an href. A crawl that canonicalises URLs passes ``join`` (e.g.
``UrlJoiner(page_url).join``): it then receives every href (or, on a page with a
``<base>``, the href already resolved against that base, which any joiner maps to
itself) and its answer (``None`` = drop) is used as is.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

import ada_url
from selectolax.lexbor import LexborCSSSelector, LexborHTMLParser, LexborNode
from yarl import URL

from courtly.parse.content_type import charset_of, is_html, media_type_of
from courtly.parse.robots_directives import parse_robots_content, parse_x_robots_tag

__all__ = [
    "DEFAULT_MAX_LINKS",
    "DEFAULT_ROBOTS_TOKEN",
    "ElementFinder",
    "Link",
    "LinkKind",
    "PageLinks",
    "extract_links",
    "new_element_finder",
]

LinkKind = Literal["a", "area", "link", "frame", "refresh"]
Join = Callable[[str], str | None]

ElementFinder = LexborCSSSelector
"""Lexbor's selector engine, to pass to :func:`extract_links` as ``finder``: one made per
page (what ``tree.css`` does) sets up a CSS parser and its memory pools each time, which
cost more than the element pass itself; a caller reading many pages keeps one (per thread:
it is not thread-safe) and passes it to every call."""


def new_element_finder() -> ElementFinder:
    """A fresh :data:`ElementFinder`."""
    return LexborCSSSelector()  # type: ignore[no-untyped-call]  # the stub's __init__ has none


DEFAULT_MAX_LINKS = 5000
DEFAULT_ROBOTS_TOKEN = "courtly"
MAX_HREF_CHARS = 8192
MAX_TITLE_CHARS = 1024
# Link-bearing elements looked at per kept link before giving up (bounds work on
# pages that repeat one href millions of times).
_RAW_PER_LINK = 8

# <link rel=...> values worth following; a stylesheet is never a page link.
_LINK_RELS = frozenset({"canonical", "alternate", "next", "prev", "previous"})
# One pass over the tree finds every element read here (the title included). Tag names
# only: the loop below skips an element without the attribute it reads, and matching the
# attribute selectors too cost about 2 µs more on an 8 KB page.
_SELECTOR = "a, area, link, base, iframe, frame, meta, title"
_STRIP_FOR_TEXT = ["script", "style", "noscript", "template"]
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
# WHATWG maps these labels to windows-1252.
_LATIN1_LABELS = frozenset({"latin-1", "iso8859-1", "ascii", "us-ascii", "iso-8859-1"})


@dataclass(frozen=True, slots=True)
class Link:
    """One outgoing link.

    ``url`` is absolute http(s), fragment removed (canonical if the caller's
    ``join`` canonicalises). ``rel`` is the lower-cased rel token list joined by
    single spaces (``""`` if none). ``nofollow`` is true when every occurrence
    of the URL on the page carried ``rel=nofollow``.
    """

    url: str
    kind: LinkKind
    rel: str = ""
    nofollow: bool = False


@dataclass(frozen=True, slots=True)
class PageLinks:
    """What one HTML page says about where to go next.

    ``base_url`` is the URL hrefs were resolved against (the page URL or its
    ``<base href>``). ``noindex``/``nofollow`` are page level, from meta robots
    and ``X-Robots-Tag`` combined; a ``nofollow`` page keeps its ``links`` (for
    the record) but the crawler follows none of them: use :meth:`followable`.
    ``truncated`` is true when the per-page link cap was hit. ``text`` is the
    visible text (scripts and styles removed) when asked for, else ``None``.
    """

    base_url: str
    links: tuple[Link, ...] = ()
    canonical: str | None = None
    noindex: bool = False
    nofollow: bool = False
    title: str | None = None
    truncated: bool = False
    text: str | None = None

    def followable(self) -> tuple[Link, ...]:
        """Links a polite crawler may follow: none on a nofollow page, else those not nofollow."""
        if self.nofollow:
            return ()
        return tuple(link for link in self.links if not link.nofollow)


def _is_crawlable(url: str) -> bool:
    lowered = url[:8].lower()
    return lowered.startswith(("http://", "https://"))


class _DefaultJoiner:
    """yarl join with ada fallback; the base is parsed once, on the first join (a page
    whose hrefs all go through the caller's ``join`` never parses it)."""

    __slots__ = ("_base", "_base_url", "_parsed")

    def __init__(self, base: str) -> None:
        self._base = base
        self._base_url: URL | None = None
        self._parsed = False

    def _parsed_base(self) -> URL | None:
        if not self._parsed:
            self._parsed = True
            try:
                self._base_url = URL(self._base)
            except (ValueError, TypeError):
                self._base_url = None
        return self._base_url

    def join(self, href: str) -> str | None:
        joined: str
        try:
            base_url = self._parsed_base()
            if base_url is None:
                raise ValueError("unparsable base")
            url = base_url.join(URL(href))
            if url.scheme not in ("http", "https") or not url.raw_host:
                return None
            joined = str(url)
        except (ValueError, TypeError, UnicodeError):
            try:
                joined = ada_url.join_url(self._base, href)
            except (ValueError, TypeError, UnicodeError):
                return None
            if not _is_crawlable(joined):
                return None
        return joined


def _clean_href(raw: str) -> str | None:
    """Strip, drop tab/CR/LF, cut the fragment; ``None`` for hrefs that name nothing to fetch."""
    if len(raw) > MAX_HREF_CHARS:
        return None
    href = raw.strip(" \t\n\r\x0c")
    if "\t" in href or "\n" in href or "\r" in href:
        href = href.replace("\t", "").replace("\n", "").replace("\r", "")
    if not href or href[0] == "#":
        return None
    hash_at = href.find("#")
    if hash_at >= 0:
        href = href[:hash_at]
    return href


def _rel_tokens(rel: str | None) -> str:
    if not rel:
        return ""
    return " ".join(rel.lower().split())


def _refresh_target(content: str | None) -> str | None:
    """The URL of ``<meta http-equiv=refresh content="5; url=/next">``, or ``None``."""
    if not content:
        return None
    _, sep, rest = content.partition(";")
    if not sep:
        _, sep, rest = content.partition(",")
        if not sep:
            return None
    rest = rest.strip()
    if rest[:3].lower() == "url":
        rest = rest[3:].lstrip()
        if rest.startswith("="):
            rest = rest[1:].lstrip()
    if len(rest) >= 2 and rest[0] in "\"'" and rest[-1] == rest[0]:
        rest = rest[1:-1]
    return rest or None


def _make_parser(body: bytes, encoding: str | None) -> LexborHTMLParser:
    """Parse ``body`` honouring a transport charset hint; a BOM or ``<meta charset>`` otherwise."""
    if encoding and not body.startswith(_BOMS):
        label = encoding.strip().lower()
        if label in _LATIN1_LABELS:
            label = "cp1252"
        try:
            info = codecs.lookup(label)
        except LookupError:
            info = None
        if info is not None and getattr(info, "_is_text_encoding", True):
            if info.name == "utf-8":
                return LexborHTMLParser(body)
            try:
                return LexborHTMLParser(body.decode(info.name, errors="replace"))
            except (LookupError, ValueError, TypeError):
                pass
    return LexborHTMLParser(body, encoding=True)


def _title_of(node: LexborNode | None) -> str | None:
    if node is None:
        return None
    title = " ".join(node.text(deep=True).split())
    return title[:MAX_TITLE_CHARS] or None


def _visible_text(tree: LexborHTMLParser) -> str:
    tree.strip_tags(_STRIP_FOR_TEXT)
    root = tree.body if tree.body is not None else tree.root
    if root is None:
        return ""
    return " ".join(root.text(deep=True, separator=" ").split())


def extract_links(
    body: bytes,
    base_url: str,
    *,
    content_type: str | None = None,
    x_robots_tag: str | Iterable[str] | None = None,
    join: Join | None = None,
    encoding: str | None = None,
    robots_token: str = DEFAULT_ROBOTS_TOKEN,
    max_links: int = DEFAULT_MAX_LINKS,
    want_text: bool = False,
    finder: ElementFinder | None = None,
) -> PageLinks:
    """Parse ``body`` (HTML bytes) fetched from ``base_url`` and return its links and directives.

    ``content_type`` is the response header: a definite non-HTML type yields no
    links (the header's robots directives still apply). ``x_robots_tag`` is the
    header value or values. ``encoding`` is the charset hint from the transport
    (``Content-Type: ...; charset=``; taken from ``content_type`` when not
    given); without one the page's BOM or ``<meta charset>`` decides, else UTF-8.
    ``robots_token`` is our product token: ``<meta name="robots">`` and
    ``<meta name="<token>">`` both apply, as do ``X-Robots-Tag`` lines scoped to
    it. At most ``max_links`` distinct links are kept (``truncated`` tells).
    ``want_text`` also returns the visible text (for fingerprints). ``finder``: a
    selector engine kept by the caller (see :data:`ElementFinder`); the answer is the
    same without one. Never raises on any input bytes.
    """
    header = parse_x_robots_tag(x_robots_tag, robots_token)
    if content_type is not None and media_type_of(content_type) and not is_html(content_type, body):
        return PageLinks(base_url=base_url, noindex=header.noindex, nofollow=header.nofollow)
    if encoding is None:
        encoding = charset_of(content_type)
    tree = _make_parser(body, encoding)
    token = robots_token.strip().lower()
    directives = header

    base_href: str | None = None
    title_node: LexborNode | None = None
    raw: list[tuple[LinkKind, str, str]] = []  # (kind, href, rel tokens) in document order
    raw_cap = max(0, max_links) * _RAW_PER_LINK
    root = tree.root
    if root is None:
        nodes: list[LexborNode] = []
    elif finder is None:
        nodes = tree.css(_SELECTOR)
    else:
        nodes = finder.find(_SELECTOR, root)
    for node in nodes:
        if len(raw) >= raw_cap:
            break
        tag = node.tag
        attrs = node.attributes
        if tag == "a" or tag == "area":
            href = attrs.get("href")
            if href:
                raw.append(("a" if tag == "a" else "area", href, _rel_tokens(attrs.get("rel"))))
        elif tag == "link":
            href = attrs.get("href")
            rel = _rel_tokens(attrs.get("rel"))
            tokens = set(rel.split())
            if href and tokens & _LINK_RELS and "stylesheet" not in tokens:
                raw.append(("link", href, rel))
        elif tag == "iframe" or tag == "frame":
            src = attrs.get("src")
            if src:
                raw.append(("frame", src, ""))
        elif tag == "meta":
            name = (attrs.get("name") or "").strip().lower()
            if name == "robots" or (token and name == token):
                directives = directives.merge(parse_robots_content(attrs.get("content")))
            elif (attrs.get("http-equiv") or "").strip().lower() == "refresh":
                target = _refresh_target(attrs.get("content"))
                if target:
                    raw.append(("refresh", target, ""))
        elif tag == "base" and base_href is None:
            base_href = attrs.get("href")
        elif tag == "title" and title_node is None:
            title_node = node

    if title_node is None and len(raw) >= raw_cap:  # the pass stopped early
        title_node = tree.css_first("title")

    effective_base = base_url
    page_joiner = _DefaultJoiner(base_url)
    if base_href is not None:
        cleaned = _clean_href(base_href)
        resolved = page_joiner.join(cleaned) if cleaned else None
        if resolved is not None:
            effective_base = resolved

    resolve = _resolver(base_url, effective_base, page_joiner, join)
    links, canonical, truncated = _collect(raw, resolve, max_links)
    truncated = truncated or len(raw) >= raw_cap
    return PageLinks(
        base_url=effective_base,
        links=links,
        canonical=canonical,
        noindex=directives.noindex,
        nofollow=directives.nofollow,
        title=_title_of(title_node),
        truncated=truncated,
        text=_visible_text(tree) if want_text else None,
    )


def _resolver(
    page_url: str, effective_base: str, page_joiner: _DefaultJoiner, join: Join | None
) -> Join:
    """The href → absolute URL function for one page (see the module docstring)."""
    if effective_base == page_url:
        return join if join is not None else page_joiner.join
    base_joiner = _DefaultJoiner(effective_base).join
    if join is None:
        return base_joiner
    outer = join

    def via_base(href: str) -> str | None:
        absolute = base_joiner(href)
        return None if absolute is None else outer(absolute)

    return via_base


def _collect(
    raw: list[tuple[LinkKind, str, str]], resolve: Join, max_links: int
) -> tuple[tuple[Link, ...], str | None, bool]:
    by_url: dict[str, Link] = {}
    resolved: dict[str, str | None] = {}  # raw href -> URL: pages repeat hrefs a lot
    canonical: str | None = None
    truncated = False
    for kind, href, rel in raw:
        if href in resolved:
            url = resolved[href]
        else:
            cleaned = _clean_href(href)
            try:
                url = None if cleaned is None else resolve(cleaned)
            except (ValueError, TypeError, UnicodeError):
                url = None
            resolved[href] = url
        if url is None:
            continue
        if rel:
            rel_set = rel.split()
            nofollow = "nofollow" in rel_set
            if kind == "link" and canonical is None and "canonical" in rel_set:
                canonical = url
        else:
            nofollow = False
        seen = by_url.get(url)
        if seen is not None:
            if seen.nofollow and not nofollow:
                by_url[url] = Link(url=seen.url, kind=seen.kind, rel=seen.rel, nofollow=False)
            continue
        if len(by_url) >= max_links:
            truncated = True
            break
        by_url[url] = Link(url=url, kind=kind, rel=rel, nofollow=nofollow)
    return tuple(by_url.values()), canonical, truncated
