"""Product tokens: how a crawler and a ``User-agent`` line name a robot.

RFC 9309 §2.2.1: a crawler's product token is made of letters, ``_`` and
``-`` only, and groups are selected by comparing it case-insensitively and
exactly. Both sides are reduced the same way, to the leading run of those
characters, lower-cased:

* the crawler's ``User-Agent`` string ``"courtly/0.1 (+https://example.org/bot)"``
  gives ``"courtly"``;
* a robots.txt value ``FooBot/1.0`` or ``FooBot*`` gives ``"foobot"``, so a
  ``Foo`` group never binds ``FooBot`` (no prefix or substring matching).

A value with no such leading run (``360Spider``, ``/1.0``) names no robot we
can be; its rules bind nobody. The value ``*`` (alone, or followed by
whitespace) is the catch-all group.
"""

from __future__ import annotations

import re

__all__ = ["WILDCARD_AGENT", "agent_of_line", "product_token"]

WILDCARD_AGENT = "*"
"""The token under which the catch-all ``User-agent: *`` group is stored."""

_TOKEN = re.compile(r"[A-Za-z_-]*").match


def product_token(user_agent: str) -> str:
    """The lower-cased product token of a User-Agent string (``""`` if it has none)."""
    found = _TOKEN(user_agent.strip())
    return found.group().lower() if found is not None else ""


def agent_of_line(value: str) -> str:
    """The token a ``User-agent:`` value names: ``"*"``, a product token, or ``""`` (nobody)."""
    value = value.strip()
    if value == WILDCARD_AGENT or (value.startswith("*") and value[1:2].isspace()):
        return WILDCARD_AGENT
    return product_token(value)
