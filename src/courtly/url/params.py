"""Query parameters the canonical form drops: tracking tags that name no resource.

Marketing and analytics links tag a URL with who sent the click (``utm_source=news``,
``gclid=...``); the server returns the same page whatever the tag says. Every tag
variant is otherwise a new URL to the seen-set, so a crawl fetches one page once per
newsletter, campaign and ad that linked to it. :class:`ParamPolicy` says which
parameter names :func:`~courtly.url.canonicalize` removes from the query:

* by default the names of :data:`TRACKING_PARAMS` and every name starting with one of
  :data:`TRACKING_PREFIXES` (``utm_*``);
* ``drop`` adds names (``--drop-param NAME``), ``keep`` removes names from the dropped
  set (``--keep-param NAME``); a name ending in ``*`` is a prefix (``ref_*``), and
  ``keep`` wins over every drop rule;
* names compare case-insensitively (``UTM_Source`` is ``utm_source``); values are
  never looked at; the other parameters keep their order and spelling.

The trade-off: a site that does read one of these names (a shop whose ``_ga`` is not
Google's) is crawled without it; ``--keep-param`` exists for that site.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "DEFAULT_PARAMS",
    "TRACKING_PARAMS",
    "TRACKING_PREFIXES",
    "ParamPolicy",
    "check_param_name",
]

TRACKING_PARAMS: Final = frozenset(
    {
        # Google Ads, Analytics, Merchant Center, DoubleClick
        "gclid",
        "gclsrc",
        "gbraid",
        "wbraid",
        "dclid",
        "_ga",
        "_gl",
        "srsltid",
        # Meta (Facebook, Instagram), Microsoft, Yandex, Twitter/X, TikTok, LinkedIn
        "fbclid",
        "igshid",
        "msclkid",
        "yclid",
        "twclid",
        "ttclid",
        "li_fat_id",
        # Mailchimp, HubSpot, Marketo, Vero, Openstat, Adobe
        "mc_cid",
        "mc_eid",
        "_hsenc",
        "_hsmi",
        "__hstc",
        "__hssc",
        "__hsfp",
        "mkt_tok",
        "vero_id",
        "_openstat",
        "s_cid",
        "ef_id",
    }
)
"""Parameter names dropped by default (see docs/urls.md for what each belongs to)."""
TRACKING_PREFIXES: Final = ("utm_",)
"""Name prefixes dropped by default: Urchin/Google Analytics campaign tags ``utm_*``."""

_NAME_RE: Final = re.compile(r"[^\s&=#?*]+\*?")


def check_param_name(name: str) -> str:
    """``name`` lower-cased if it is a usable parameter name or prefix (``ref_*``), else
    raise ``ValueError`` saying why (empty, ``&``, ``=``, ``#``, ``?``, space, inner ``*``)."""
    if not _NAME_RE.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a query parameter name: a non-empty name without spaces, "
            "'&', '=', '#' or '?', optionally ending in '*' (a prefix)"
        )
    return name.lower()


def _split(names: frozenset[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    exact = frozenset(n for n in names if not n.endswith("*"))
    prefixes = tuple(sorted(n[:-1] for n in names if n.endswith("*")))
    return exact, prefixes


@dataclass(frozen=True, slots=True)
class ParamPolicy:
    """Which query parameters to drop (see the module doc). Names are lower-case; a name
    ending in ``*`` is a prefix. Build one with :meth:`adjusted`."""

    drop: frozenset[str] = TRACKING_PARAMS | frozenset(p + "*" for p in TRACKING_PREFIXES)
    keep: frozenset[str] = frozenset()
    _hint: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _drop_exact: frozenset[str] = field(init=False, repr=False, compare=False)
    _drop_prefixes: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _keep_exact: frozenset[str] = field(init=False, repr=False, compare=False)
    _keep_prefixes: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in (*self.drop, *self.keep):
            if check_param_name(name) != name:
                raise ValueError(f"parameter name {name!r} must be lower-case")
        drop_exact, drop_prefixes = _split(self.drop)
        keep_exact, keep_prefixes = _split(self.keep)
        object.__setattr__(self, "_drop_exact", drop_exact)
        object.__setattr__(self, "_drop_prefixes", drop_prefixes)
        object.__setattr__(self, "_keep_exact", keep_exact)
        object.__setattr__(self, "_keep_prefixes", keep_prefixes)
        # A cheap test run on every query first: can any parameter here be a dropped one?
        alternatives = [re.escape(n) + r"(?:[=&]|$)" for n in sorted(drop_exact)]
        alternatives += [re.escape(p) for p in drop_prefixes]
        hint = "(?:^|&)(?:" + "|".join(alternatives) + ")" if alternatives else "(?!)"
        object.__setattr__(self, "_hint", re.compile(hint, re.IGNORECASE))

    def adjusted(self, *, keep: tuple[str, ...] = (), drop: tuple[str, ...] = ()) -> ParamPolicy:
        """This policy with more names dropped and more kept (``ValueError`` for a bad name)."""
        if not keep and not drop:
            return self
        kept = frozenset(check_param_name(n) for n in keep)
        dropped = frozenset(check_param_name(n) for n in drop)
        return ParamPolicy(drop=(self.drop | dropped) - kept, keep=self.keep | kept)

    def drops(self, name: str) -> bool:
        """Whether the parameter ``name`` (as written in the query) is dropped."""
        name = name.lower()
        if name in self._keep_exact or name.startswith(self._keep_prefixes):
            return False
        return name in self._drop_exact or name.startswith(self._drop_prefixes)

    def strip(self, query: str) -> str:
        """``query`` (without ``?``) with the dropped parameters removed, the others in
        their order; ``""`` if none is left but empty ``&&`` parts."""
        if not query or self._hint.search(query) is None:
            return query
        drops = self.drops
        kept = [part for part in query.split("&") if not drops(part.partition("=")[0])]
        if not any(kept):
            return ""
        return "&".join(kept)


DEFAULT_PARAMS: Final = ParamPolicy()
"""The default policy: drop :data:`TRACKING_PARAMS` and :data:`TRACKING_PREFIXES`."""
