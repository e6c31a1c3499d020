"""Is a response HTML? Decided from the ``Content-Type`` header, sniffing only when it says nothing.

Follows the spirit of the WHATWG MIME sniffing rules: a definite header wins
(``text/plain`` is not HTML even if it looks like it); the body is sniffed only
when the header is missing, empty or a known "don't know" value
(``application/octet-stream``, ``unknown/unknown``, ``application/unknown``,
``*/*``). Non-HTML responses are archived but not parsed for links.
"""

from __future__ import annotations

__all__ = ["HTML_MEDIA_TYPES", "charset_of", "is_html", "media_type_of"]

HTML_MEDIA_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_UNKNOWN_MEDIA_TYPES = frozenset(
    {"", "application/octet-stream", "unknown/unknown", "application/unknown", "*/*"}
)
# Byte patterns that start an HTML document (after whitespace), compared lower-cased.
# Each must be followed by a tag-terminating byte (space or ">"), except comments.
_HTML_OPENERS = (
    b"<!doctype html",
    b"<html",
    b"<head",
    b"<script",
    b"<iframe",
    b"<h1",
    b"<div",
    b"<font",
    b"<table",
    b"<a",
    b"<style",
    b"<title",
    b"<b",
    b"<body",
    b"<br",
    b"<p",
)
_TERMINATORS = frozenset(b" >\t\n\r\x0c")
_SNIFF_BYTES = 512


def media_type_of(content_type: str | None) -> str:
    """The lower-cased media type of a ``Content-Type`` value, no parameters (``""`` if none)."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def charset_of(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a ``Content-Type`` value, unquoted, lower-cased, or ``None``."""
    if not content_type:
        return None
    for param in content_type.split(";")[1:]:
        name, sep, value = param.partition("=")
        if sep and name.strip().lower() == "charset":
            cleaned = value.strip().strip("\"'").strip().lower()
            return cleaned or None
    return None


def _sniff_html(body: bytes) -> bool:
    head = body[:_SNIFF_BYTES]
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    head = head.lstrip(b" \t\n\r\x0c").lower()
    if head.startswith(b"<!--"):
        return True
    for opener in _HTML_OPENERS:
        if head.startswith(opener):
            rest = head[len(opener) : len(opener) + 1]
            if not rest or rest[0] in _TERMINATORS:
                return True
    return False


def is_html(content_type: str | None, body: bytes) -> bool:
    """True when the response should be parsed as HTML.

    ``content_type`` is the raw header value (parameters allowed) or ``None``;
    ``body`` is the decoded payload (only its first 512 bytes are looked at, and
    only when the header does not decide).
    """
    media_type = media_type_of(content_type)
    if media_type in HTML_MEDIA_TYPES:
        return True
    if media_type in _UNKNOWN_MEDIA_TYPES:
        return _sniff_html(body)
    return False
