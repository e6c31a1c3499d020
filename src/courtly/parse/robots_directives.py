"""Page-level robots directives: ``<meta name="robots">`` and the ``X-Robots-Tag`` header.

Only two directives change what the crawler does: ``noindex`` (do not keep the
page in the index / mark it in the catalogue) and ``nofollow`` (follow none of
its links). ``none`` means both. Everything else (``all``, ``index``,
``follow``, ``noarchive``, ``max-snippet: 20``, ``unavailable_after: ...``) is
recognised as harmless and ignored. Directives are case-insensitive and may be
separated by commas or whitespace (both spellings exist in the wild).

``X-Robots-Tag`` values may scope directives to one crawler with a
``"name: directives"`` prefix, e.g. ``googlebot: noindex, nofollow``; the scope
runs to the end of that header value. Unscoped directives apply to every
crawler; scoped ones apply only when ``name`` equals our product token
(case-insensitive). Several header lines are read independently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["RobotsDirectives", "parse_robots_content", "parse_x_robots_tag"]

# Directives that take a value after a colon; "name:" with one of these names is
# a directive, not a crawler scope.
_VALUED_DIRECTIVES = frozenset(
    {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
)
_SCOPE = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*:\s*(.*)$", re.DOTALL)
_SEPARATORS = re.compile(r"[\s,]+")


@dataclass(frozen=True, slots=True)
class RobotsDirectives:
    """The directives that matter to a crawler; ``merge`` keeps the stricter of two."""

    noindex: bool = False
    nofollow: bool = False

    def merge(self, other: RobotsDirectives) -> RobotsDirectives:
        """The union of both: a directive set by either side stays set."""
        return RobotsDirectives(
            noindex=self.noindex or other.noindex, nofollow=self.nofollow or other.nofollow
        )


_NONE = RobotsDirectives()


def _from_tokens(tokens: Iterable[str]) -> RobotsDirectives:
    noindex = nofollow = False
    for raw in tokens:
        token = raw.strip().lower()
        if token == "noindex":
            noindex = True
        elif token == "nofollow":
            nofollow = True
        elif token == "none":
            noindex = nofollow = True
    if not (noindex or nofollow):
        return _NONE
    return RobotsDirectives(noindex=noindex, nofollow=nofollow)


def parse_robots_content(content: str | None) -> RobotsDirectives:
    """Directives in the ``content`` of a robots ``<meta>`` tag (``None`` → none set)."""
    if not content:
        return _NONE
    return _from_tokens(_SEPARATORS.split(content))


def parse_x_robots_tag(values: str | Iterable[str] | None, token: str) -> RobotsDirectives:
    """Directives from one or more ``X-Robots-Tag`` header values that apply to ``token``.

    ``token`` is our crawler's product token (e.g. ``"courtly"``); scoped
    directives for other crawlers are ignored. Never raises.
    """
    if values is None:
        return _NONE
    if isinstance(values, str):
        values = (values,)
    wanted = token.strip().lower()
    result = _NONE
    for value in values:
        scope: str | None = None  # None: every crawler
        for part in value.split(","):
            match = _SCOPE.match(part)
            if match is not None and match.group(1).lower() not in _VALUED_DIRECTIVES:
                scope = match.group(1).lower()
                part = match.group(2)
            if scope is not None and scope != wanted:
                continue
            found = _from_tokens(_SEPARATORS.split(part))
            if found is not _NONE:
                result = result.merge(found)
    return result
