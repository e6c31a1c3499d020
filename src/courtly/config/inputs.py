"""The checks of what identifies a crawl: its seeds and its User-Agent."""

from __future__ import annotations

import re

from courtly.errors import ConfigError, InvalidURL
from courtly.url.canonical import canonicalize

__all__ = ["check_seeds", "check_user_agent", "shorten"]

_CONTACT_RE = re.compile(
    r"(https?://[^\s;()]+|mailto:[^\s;()]+|[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,})"
)
_TOKEN_RE = re.compile(r"^[A-Za-z_-]+(/[^\s]+)?(\s|$)")


def shorten(text: str, limit: int = 80) -> str:
    """``repr(text)``, cut to about ``limit`` characters with its full length said."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[: limit - 20]!r}... ({len(text)} characters)"


def check_seeds(seeds: tuple[str, ...] | list[str]) -> None:
    """Raise :class:`ConfigError` listing every seed that is not a crawlable http(s) URL
    (each shortened, with why), so a bad seed is never stored in a state directory."""
    bad: list[str] = []
    for seed in seeds:
        try:
            canonicalize(seed)
        except InvalidURL as error:
            bad.append(f"  {shorten(seed)}: {str(error)[:160]}")
    if bad:
        many = f"{len(bad)} of {len(seeds)} seeds are" if len(seeds) > 1 else "the seed is"
        raise ConfigError(f"{many} not crawlable http(s) URLs:\n" + "\n".join(bad))


def check_user_agent(user_agent: str) -> str:
    """Return ``user_agent`` if it identifies us honestly, else raise :class:`ConfigError`.

    Honest means: it starts with a product token (letters, ``_``, ``-``;
    optionally ``/version``), as RFC 9309 matches on, and carries a contact, a
    URL or an e-mail address, so that a site owner can reach the operator.
    """
    text = user_agent.strip()
    if not _TOKEN_RE.match(text):
        raise ConfigError(
            f"User-Agent {user_agent!r} must start with a product token such as 'mybot/1.0'"
        )
    if not _CONTACT_RE.search(text):
        raise ConfigError(
            f"User-Agent {user_agent!r} carries no contact: add a URL or an e-mail address, "
            "e.g. 'mybot/1.0 (+https://example.org/bot; ops@example.org)'"
        )
    return text
