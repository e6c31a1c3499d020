"""The parsed, compiled rules of one robots.txt file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from courtly.robots.agent import WILDCARD_AGENT, product_token
from courtly.robots.normalize import normalize_path, path_of
from courtly.robots.pattern import CompiledRule, RuleMatcher, compile_rule

__all__ = ["RobotsRules"]

_AGENT_CACHE_ENTRIES = 256
_ROBOTS_PATH = "/robots.txt"
_MISSING = object()


class RobotsRules:
    """The groups, crawl delays and sitemaps of one robots.txt, compiled once.

    Built by :func:`courtly.robots.parse`. Queries take the crawler's product
    token or its whole User-Agent string; the group is chosen by exact,
    case-insensitive product-token comparison, falling back to the ``*`` group,
    and finally to "everything allowed". The per-agent choice is cached.
    Instances are immutable from the outside and safe to share.
    """

    __slots__ = ("_agent_cache", "_delays", "_matchers", "_sitemaps")

    def __init__(
        self,
        groups: Mapping[str, Sequence[CompiledRule]],
        crawl_delays_s: Mapping[str, float],
        sitemaps: Sequence[str],
    ) -> None:
        self._matchers = {token: RuleMatcher(list(rules)) for token, rules in groups.items()}
        self._delays = dict(crawl_delays_s)
        self._sitemaps = tuple(sitemaps)
        self._agent_cache: dict[str, RuleMatcher | None] = {}

    @classmethod
    def allow_all(cls) -> RobotsRules:
        """Rules that restrict nothing (a missing or unavailable robots.txt)."""
        return cls({}, {}, ())

    @classmethod
    def disallow_all(cls) -> RobotsRules:
        """Rules that forbid every path but ``/robots.txt`` (an unreachable robots.txt)."""
        rule = compile_rule("/", allow=False)
        assert rule is not None
        return cls({WILDCARD_AGENT: [rule]}, {}, ())

    def _matcher_for(self, user_agent: str) -> RuleMatcher | None:
        cached = self._agent_cache.get(user_agent, _MISSING)
        if cached is not _MISSING:
            return cached  # type: ignore[return-value]
        token = product_token(user_agent)
        matcher = self._matchers.get(token) if token else None
        if matcher is None:
            matcher = self._matchers.get(WILDCARD_AGENT)
        if len(self._agent_cache) >= _AGENT_CACHE_ENTRIES:
            self._agent_cache.clear()
        self._agent_cache[user_agent] = matcher
        return matcher

    def allowed(self, url: str, user_agent: str) -> bool:
        """May ``user_agent`` fetch ``url``?

        ``url`` is a full URL or a path (with query); its scheme, authority and
        fragment are ignored. ``user_agent`` is a product token or a full
        User-Agent string (its leading product token is used).
        ``/robots.txt`` itself is always allowed.
        """
        path = path_of(url)
        if path.startswith(_ROBOTS_PATH) and path[len(_ROBOTS_PATH) : len(_ROBOTS_PATH) + 1] in (
            "",
            "?",
        ):
            return True
        matcher = self._matcher_for(user_agent)
        if matcher is None:
            return True
        return matcher.allowed(normalize_path(path))

    def crawl_delay_s(self, user_agent: str) -> float | None:
        """The ``Crawl-delay`` for ``user_agent`` in seconds, or ``None``.

        The crawler's own group(s) come first; if they give no valid delay the
        ``*`` group's is used. Merged groups keep the largest valid value.
        """
        token = product_token(user_agent)
        if token and token in self._delays:
            return self._delays[token]
        return self._delays.get(WILDCARD_AGENT)

    @property
    def sitemaps(self) -> list[str]:
        """Every ``Sitemap`` value in file order, duplicates removed (a fresh list)."""
        return list(self._sitemaps)

    @property
    def agents(self) -> list[str]:
        """The product tokens (and ``*``) that have a group, sorted."""
        return sorted(self._matchers)

    def rules_for(self, user_agent: str) -> tuple[CompiledRule, ...]:
        """The merged rules that apply to ``user_agent`` (empty if none), in file order."""
        matcher = self._matcher_for(user_agent)
        return matcher.rules if matcher is not None else ()

    def __repr__(self) -> str:
        rules = sum(len(matcher.rules) for matcher in self._matchers.values())
        return f"RobotsRules(agents={self.agents!r}, rules={rules}, sitemaps={len(self._sitemaps)})"
