"""robots.txt for courtly: RFC 9309 parsing and matching, fetch policy, and a per-authority cache.

* :func:`parse` turns a body into :class:`RobotsRules` (``allowed``,
  ``crawl_delay_s``, ``sitemaps``): pure, linear-time matching.
* :func:`fetch_robots` applies the fetch policy (redirects, status codes,
  size, errors) over a :class:`courtly.fetch.records.Fetcher`.
* :class:`RobotsCache` decides, from plain times, when a copy may be used,
  when to refetch and what to obey while a server is unreachable.
"""

from __future__ import annotations

from courtly.robots.agent import WILDCARD_AGENT, product_token
from courtly.robots.authority import Authority, authority_of, robots_url_for
from courtly.robots.cache import RobotsCache, RobotsDecision
from courtly.robots.fetch import RobotsFetchOutcome, fetch_robots
from courtly.robots.parse import PARSE_LIMIT_BYTES, parse
from courtly.robots.pattern import CompiledRule
from courtly.robots.rules import RobotsRules

__all__ = [
    "PARSE_LIMIT_BYTES",
    "WILDCARD_AGENT",
    "Authority",
    "CompiledRule",
    "RobotsCache",
    "RobotsDecision",
    "RobotsFetchOutcome",
    "RobotsRules",
    "authority_of",
    "fetch_robots",
    "parse",
    "product_token",
    "robots_url_for",
]
