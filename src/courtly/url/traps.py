"""Crawler-trap guards: cheap checks on the shape of a canonical URL.

Traps are URL spaces without end: calendars that always have a next month, relative links that
nest a path one level deeper on every page (``/a/b/a/b/a/b/...``), faceted search that adds one
more filter per click. :func:`trap_reason` rejects the shapes they leave behind, returning a
stable reason string for counters:

- ``"url_too_long"``: more than ``max_url_length`` characters;
- ``"path_too_deep"``: more than ``max_path_depth`` non-empty path segments;
- ``"repeated_segments"``: one path segment occurring more than ``max_repeated_segment``
  times anywhere in the path;
- ``"query_explosion"``: more than ``max_query_params`` non-empty ``&``-separated parameters.

Checks run in that order. Per-host budgets, the other half of trap defence, belong to the
frontier.
"""

from __future__ import annotations

from dataclasses import dataclass

from courtly.errors import ConfigError
from courtly.url.canonical import MAX_URL_LENGTH

__all__ = ["TrapConfig", "trap_reason"]


@dataclass(frozen=True, slots=True)
class TrapConfig:
    """Limits on the shape of a URL; every limit is a count (>= 1) and is inclusive."""

    max_path_depth: int = 16
    max_repeated_segment: int = 3
    max_query_params: int = 12
    max_url_length: int = MAX_URL_LENGTH

    def __post_init__(self) -> None:
        limits = {
            "max_path_depth": self.max_path_depth,
            "max_repeated_segment": self.max_repeated_segment,
            "max_query_params": self.max_query_params,
            "max_url_length": self.max_url_length,
        }
        for name, value in limits.items():
            if value < 1:
                raise ConfigError(f"TrapConfig.{name} must be >= 1, got {value}")


def trap_reason(canonical_url: str, cfg: TrapConfig) -> str | None:
    """Return ``None`` when ``canonical_url`` looks crawlable, else the trap reason
    (``"url_too_long"``, ``"path_too_deep"``, ``"repeated_segments"``, ``"query_explosion"``)."""
    if len(canonical_url) > cfg.max_url_length:
        return "url_too_long"
    start = canonical_url.find("://")
    start = canonical_url.find("/", start + 3 if start >= 0 else 0)
    if start < 0:
        return None
    path, _, query = canonical_url[start:].partition("?")
    path = path.partition("#")[0]
    query = query.partition("#")[0]
    segments = [segment for segment in path.split("/") if segment]
    if len(segments) > cfg.max_path_depth:
        return "path_too_deep"
    if len(segments) > cfg.max_repeated_segment:
        counts: dict[str, int] = {}
        for segment in segments:
            seen = counts.get(segment, 0) + 1
            if seen > cfg.max_repeated_segment:
                return "repeated_segments"
            counts[segment] = seen
    if query.count("&") >= cfg.max_query_params:
        params = sum(1 for param in query.split("&") if param)
        if params > cfg.max_query_params:
            return "query_explosion"
    return None
