"""Parse robots.txt text into :class:`RobotsRules` (RFC 9309 with lenient edges).

Parsing never raises on any input. What is read:

* At most ``limit_bytes`` (default 500 KiB) of the UTF-8 body; a line cut by
  the limit is dropped whole, so half a rule never becomes a rule. A leading
  byte-order mark is skipped; invalid UTF-8 is replaced, not fatal.
* Lines end with LF, CR or CRLF; ``#`` starts a comment; surrounding
  whitespace is ignored; field names are case-insensitive.
* ``field: value`` is the normal form. Leniencies, only where unambiguous: the
  colon may be missing when the field is a known one followed by whitespace
  (``Disallow /x``, ``Sitemap https://...``), and a few known spellings are
  accepted (``useragent``, ``user agent``, ``dissallow``, ``site-map``,
  ``crawl delay`` ...). Unknown fields are ignored.
* A group is one or more ``User-agent`` lines and the rules after them; only a
  ``User-agent`` line that follows a rule starts a new group. Blank lines,
  comments, ``Sitemap``, ``Crawl-delay`` and unknown lines never split a
  group. Groups naming the same product token are merged. Rules before the
  first ``User-agent`` are ignored.
* An empty ``Allow``/``Disallow`` value means nothing (but still counts as a
  rule for grouping). A pattern that does not start with ``/`` or ``*`` can
  never match a path and is ignored.
* ``Crawl-delay`` accepts a plain non-negative decimal (``2``, ``0.5``,
  ``.5``); anything else is ignored. ``Sitemap`` lines are collected wherever
  they stand, even before the first ``User-agent``.
"""

from __future__ import annotations

import math
import re

from courtly.robots.agent import agent_of_line
from courtly.robots.normalize import normalize_pattern
from courtly.robots.pattern import CompiledRule, compile_rule
from courtly.robots.rules import RobotsRules

__all__ = ["PARSE_LIMIT_BYTES", "parse"]

PARSE_LIMIT_BYTES = 500 * 1024
"""Bytes of a robots.txt body that are parsed (RFC 9309 requires at least 500 KiB)."""

_BOM = b"\xef\xbb\xbf"
_USER_AGENT = "user-agent"
_ALLOW = "allow"
_DISALLOW = "disallow"
_SITEMAP = "sitemap"
_CRAWL_DELAY = "crawl-delay"
_FIELDS = {
    "user-agent": _USER_AGENT,
    "useragent": _USER_AGENT,
    "user agent": _USER_AGENT,
    "allow": _ALLOW,
    "disallow": _DISALLOW,
    "dissallow": _DISALLOW,
    "dissalow": _DISALLOW,
    "disalow": _DISALLOW,
    "diasllow": _DISALLOW,
    "disallaw": _DISALLOW,
    "sitemap": _SITEMAP,
    "site-map": _SITEMAP,
    "crawl-delay": _CRAWL_DELAY,
    "crawldelay": _CRAWL_DELAY,
    "crawl delay": _CRAWL_DELAY,
}
_DECIMAL = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)").fullmatch


def _limited_text(text: str | bytes, limit_bytes: int) -> str:
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if len(data) > limit_bytes:
        cut = data[:limit_bytes]
        if data[limit_bytes : limit_bytes + 1] not in (b"\n", b"\r"):
            end = max(cut.rfind(b"\n"), cut.rfind(b"\r"))
            cut = cut[: end + 1]
        data = cut
    decoded = data.decode("utf-8", "replace")
    return decoded[1:] if decoded.startswith("\ufeff") else decoded


def _split_line(line: str) -> tuple[str, str] | None:
    """``(field, value)`` of a non-empty, comment-free, stripped line; ``None`` if unreadable."""
    colon = line.find(":")
    if colon >= 0:
        field = _FIELDS.get(" ".join(line[:colon].lower().split()))
        if field is not None:
            return field, line[colon + 1 :].strip()
    words = line.split(None, 2)
    if len(words) < 2:
        return None
    if len(words) == 3:
        field = _FIELDS.get(f"{words[0]} {words[1]}".lower())
        if field is not None:
            return field, words[2].strip()
    field = _FIELDS.get(words[0].lower())
    if field is not None:
        return field, line[len(words[0]) :].strip()
    return None


def _crawl_delay_s(value: str) -> float | None:
    if _DECIMAL(value) is None:
        return None
    delay_s = float(value)
    return delay_s if math.isfinite(delay_s) else None


def parse(text: str | bytes, *, limit_bytes: int = PARSE_LIMIT_BYTES) -> RobotsRules:
    """Parse a robots.txt body (``str`` or raw ``bytes``) into compiled rules; never raises."""
    body = _limited_text(text, limit_bytes)
    groups: dict[str, list[CompiledRule]] = {}
    delays_s: dict[str, float] = {}
    sitemaps: dict[str, None] = {}
    compiled: dict[tuple[str, bool], CompiledRule | None] = {}
    current: list[str] = []
    current_delay_s: float | None = None
    seen_rule = False
    for raw_line in body.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        hash_at = raw_line.find("#")
        line = (raw_line[:hash_at] if hash_at >= 0 else raw_line).strip()
        if not line:
            continue
        split = _split_line(line)
        if split is None:
            continue
        field, value = split
        if field == _USER_AGENT:
            if seen_rule:
                _keep_delay(delays_s, current, current_delay_s)
                current = []
                current_delay_s = None
                seen_rule = False
            token = agent_of_line(value)
            if token and token not in current:
                current.append(token)
                groups.setdefault(token, [])
            elif not token and not current:
                current.append("")
        elif field is _ALLOW or field is _DISALLOW:
            if not current:
                continue
            seen_rule = True
            allow = field is _ALLOW
            key = (value, allow)
            if key not in compiled:
                compiled[key] = compile_rule(normalize_pattern(value), allow=allow)
            rule = compiled[key]
            if rule is not None:
                for token in current:
                    if token:
                        groups[token].append(rule)
        elif field is _SITEMAP:
            if value:
                sitemaps[value] = None
        elif field is _CRAWL_DELAY and current:
            delay_s = _crawl_delay_s(value)
            if delay_s is not None:
                current_delay_s = max(delay_s, current_delay_s or 0.0)
    _keep_delay(delays_s, current, current_delay_s)
    return RobotsRules(groups, delays_s, list(sitemaps))


def _keep_delay(delays_s: dict[str, float], tokens: list[str], delay_s: float | None) -> None:
    """Give every agent of a finished group its crawl delay (the largest, across merged groups)."""
    if delay_s is None:
        return
    for token in tokens:
        if token:
            delays_s[token] = max(delays_s.get(token, delay_s), delay_s)
