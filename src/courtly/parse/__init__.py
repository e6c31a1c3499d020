"""Parsing fetched content: links and page-level robots directives, sitemaps, fingerprints.

The fingerprint functions (``content_hash``, ``hamming``, ``simhash64``) are loaded on first
use: they need numpy, which a crawl that never asks for a SimHash should not pay to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from courtly.parse.content_type import charset_of, is_html, media_type_of
from courtly.parse.links import (
    DEFAULT_MAX_LINKS,
    DEFAULT_ROBOTS_TOKEN,
    Link,
    LinkKind,
    PageLinks,
    extract_links,
)
from courtly.parse.robots_directives import (
    RobotsDirectives,
    parse_robots_content,
    parse_x_robots_tag,
)
from courtly.parse.sitemaps import (
    DEFAULT_MAX_SITEMAP_BYTES,
    DEFAULT_MAX_SITEMAP_URLS,
    Sitemap,
    SitemapKind,
    SitemapUrl,
    parse_sitemap,
)

if TYPE_CHECKING:
    from courtly.parse.fingerprint import content_hash, hamming, simhash64

__all__ = [
    "DEFAULT_MAX_LINKS",
    "DEFAULT_MAX_SITEMAP_BYTES",
    "DEFAULT_MAX_SITEMAP_URLS",
    "DEFAULT_ROBOTS_TOKEN",
    "Link",
    "LinkKind",
    "PageLinks",
    "RobotsDirectives",
    "Sitemap",
    "SitemapKind",
    "SitemapUrl",
    "charset_of",
    "content_hash",
    "extract_links",
    "hamming",
    "is_html",
    "media_type_of",
    "parse_robots_content",
    "parse_sitemap",
    "parse_x_robots_tag",
    "simhash64",
]

_LAZY = frozenset({"content_hash", "hamming", "simhash64"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from courtly.parse import fingerprint

        return getattr(fingerprint, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
