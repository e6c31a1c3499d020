"""Rendering a :class:`~courtly.sandbox.resources.Page` to HTML bytes."""

from __future__ import annotations

import random
import zlib
from html import escape

from courtly.sandbox.resources import Page

__all__ = ["build_filler", "render_page"]

_WORDS = (
    "polite",
    "crawler",
    "frontier",
    "queue",
    "host",
    "delay",
    "robots",
    "sitemap",
    "archive",
    "fetch",
    "page",
    "link",
    "court",
    "herald",
    "steward",
    "banner",
    "garden",
    "river",
    "stone",
    "lantern",
    "meadow",
    "harbour",
    "castle",
    "market",
    "letter",
    "north",
    "summer",
    "winter",
    "silver",
    "copper",
    "amber",
    "velvet",
    "signal",
    "orchard",
    "bridge",
    "tower",
    "chapel",
)


def build_filler(seed: int, size_bytes: int = 96_000) -> str:
    """Deterministic prose (letters, spaces and full stops only) of ``size_bytes`` characters."""
    rng = random.Random(f"{seed}|filler")
    parts: list[str] = []
    total = 0
    while total < size_bytes:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 18)))
        sentence = sentence.capitalize() + ". "
        parts.append(sentence)
        total += len(sentence)
    return "".join(parts)[:size_bytes]


def render_page(page: Page, filler: str) -> bytes:
    """The page as UTF-8 HTML of roughly ``page.size_bytes`` bytes (links first, then prose)."""
    title = escape(page.title)
    meta = '<meta name="robots" content="index, nofollow">' if page.meta_nofollow else ""
    items = []
    for link in page.links:
        rel = ' rel="nofollow"' if link.nofollow else ""
        text = escape(link.text or link.href)
        items.append(f'<li><a href="{escape(link.href, quote=True)}"{rel}>{text}</a></li>\n')
    head = (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"{meta}</head>\n<body>\n<h1>{title}</h1>\n<nav><ul>\n{''.join(items)}</ul></nav>\n<main><p>"
    )
    tail = "</p></main>\n</body></html>\n"
    need = max(0, page.size_bytes - len(head) - len(tail))
    if need and filler:
        offset = zlib.crc32(page.title.encode()) % len(filler)
        text = (filler[offset:] + filler) * (1 + need // max(1, len(filler)))
        body = text[:need]
    else:
        body = ""
    return (head + body + tail).encode()
