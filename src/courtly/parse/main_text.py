"""The main text of an HTML page, and its digest: what "the page changed" is judged on.

A page's bytes change with every clock, counter, ad rotation or session token in its
template; its main text does not. :func:`main_text` keeps the text a reader came for:

1. drop ``script``, ``style``, ``noscript``, ``template``, ``iframe``, ``svg``, ``form``,
   ``nav``, ``header``, ``footer``, ``aside`` and every element whose ``id`` or
   ``class`` names boilerplate (:data:`BOILERPLATE_WORDS`: ad, banner, clock, counter,
   cookie, sidebar, timestamp, visitors...), or that carries ``data-nosnippet`` or
   ``aria-hidden="true"``;
2. take the first ``main`` element, else the first ``article``, else ``body``;
3. collapse whitespace.

:func:`text_digest` is xxh3-64 of that text (an unsigned 64-bit int); the raw-bytes
digest stays for the archive (``WARC-Payload-Digest``). Trade-off: a change inside a
stripped region (a price in a sidebar) is not seen; a boilerplate extractor with a
model (resiliparse, trafilatura) would be sharper and costs a dependency.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser
from xxhash import xxh3_64_intdigest

__all__ = ["BOILERPLATE_WORDS", "main_text", "main_text_and_title", "text_digest"]

_STRIP_TAGS = [
    "script",
    "style",
    "noscript",
    "template",
    "iframe",
    "svg",
    "form",
    "nav",
    "header",
    "footer",
    "aside",
]
BOILERPLATE_WORDS = (
    "ad",
    "ads",
    "advert",
    "advertisement",
    "banner",
    "clock",
    "counter",
    "cookie",
    "cookies",
    "hits",
    "promo",
    "sidebar",
    "sponsor",
    "sponsored",
    "timestamp",
    "visitors",
    "breadcrumb",
    "breadcrumbs",
    "share",
)
_BOILERPLATE = re.compile(r"(?:^|[\s_-])(?:" + "|".join(BOILERPLATE_WORDS) + r")(?:$|[\s_-])", re.I)


def main_text(html: bytes | str) -> str:
    """The main text of ``html`` (module docstring), whitespace collapsed; "" for none."""
    return main_text_and_title(html)[0]


def main_text_and_title(html: bytes | str) -> tuple[str, str | None]:
    """:func:`main_text` and the page's ``<title>`` (collapsed, ``None`` if empty), one parse."""
    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = " ".join(title_node.text().split()) if title_node is not None else ""
    tree.strip_tags(_STRIP_TAGS)
    doomed = []
    for node in tree.css("[id], [class], [data-nosnippet], [aria-hidden]"):
        attrs = node.attributes
        label = f"{attrs.get('id') or ''} {attrs.get('class') or ''}"
        if (
            _BOILERPLATE.search(label)
            or "data-nosnippet" in attrs
            or (attrs.get("aria-hidden") or "").lower() == "true"
        ):
            doomed.append(node)
    for node in doomed:
        node.decompose()
    root = tree.css_first("main") or tree.css_first("article") or tree.body or tree.root
    if root is None:
        return "", title or None
    return " ".join(root.text(deep=True, separator=" ").split()), title or None


def text_digest(text: str) -> int:
    """xxh3-64 of ``text`` (UTF-8) as an unsigned 64-bit int."""
    return xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"))
