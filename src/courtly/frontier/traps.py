"""Traps by shape: link chains that walk one URL template, bounded per template per host.

A calendar links each month to the next (``/calendar/2026/01/`` -> ``/calendar/2026/02/``),
an endless listing each page to the next (``?page=7`` -> ``?page=8``), a relative link
nests a path one level deeper on every page (``/a/`` -> ``/a/b/`` -> ``/a/b/b/``). Each
page looks fine on its own (:func:`courtly.url.trap_reason` passes it); the chain does not.

**Template.** :func:`url_template` is the URL's path and query with every run of digits
replaced by ``{n}``: ``/calendar/2026/01/`` and ``/calendar/1999/12/`` share
``/calendar/{n}/{n}/``; ``/list?page=7`` is ``/list?page={n}``.

**Walk step.** A link from page R to URL U on the same host is a *step* when U has R's
template, or U's path goes down into a directory below R's (ever deeper; the root
directory excepted). Its *walk key* is the template, or ``deeper:/<first segment>/``.
A URL's *chain* is the number of steps that led to it: its referrer's chain + 1 for a
step, 0 otherwise (a seed, another host, another template).

**Bounds** (:class:`WalkConfig`, defaults in brackets):

* a URL whose chain would exceed ``max_chain`` [10] is refused with the skip reason
  ``"template_chain"``: one walk costs at most ``max_chain`` pages past its entry in each
  direction (a calendar linked once: at most 2 x 10 + 1 = 21 months);
* a URL whose chain exceeds ``walk_from`` [4] is *walking*; at most ``max_walking`` [100]
  walking URLs are admitted per walk key per host, the next ones are refused with
  ``"template_budget"``: however many entries a trap has and however long the crawl,
  it costs at most ``max_walking`` pages per template per host beyond the first
  ``walk_from`` hops of each entry.

Pages of a site that link each other by number (``/p/17.html`` -> ``/p/912.html``) are
steps too, but the chain follows the *first* discovery of each URL, which breadth-first
keeps short (the hops from the template's first page), so they rarely walk. The
trade-off: a listing reachable only page by page (``next`` links, no index) is cut after
``max_chain`` pages; raise the bound for such a site.

:class:`WalkGuard` keeps the chains of the URLs queued (and forgets a URL once its page
has been read) and the walking counts, in memory; a crawl with a state directory saves
the walking part (:meth:`WalkGuard.state`: counts, walking URLs, their chains) with its
progress, so a resumed crawl keeps its ``max_walking`` budgets and its walks' chains
(``courtly.frontier.learnt``); the chains of short steps restart from 0.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Final

from courtly.errors import ConfigError

__all__ = ["WalkConfig", "WalkGuard", "is_walk_step", "url_template", "walk_key"]

_DIGITS: Final = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class WalkConfig:
    """Bounds on template walks (see the module doc); counts, inclusive."""

    max_chain: int = 10
    walk_from: int = 4
    max_walking: int = 100

    def __post_init__(self) -> None:
        if self.max_chain < 1 or self.walk_from < 0 or self.max_walking < 0:
            raise ConfigError("WalkConfig needs max_chain >= 1, walk_from >= 0, max_walking >= 0")


def _split(url: str) -> tuple[str, str]:
    """``(origin, path?query)`` of a canonical URL."""
    start = url.find("/", url.find("://") + 3)
    if start < 0:
        return url, "/"
    return url[:start], url[start:]


def url_template(url: str) -> str:
    """The path and query of canonical ``url`` with digit runs replaced by ``{n}``."""
    return _DIGITS.sub("{n}", _split(url)[1])


def walk_key(referrer: str, url: str) -> str | None:
    """The template the link ``referrer`` -> ``url`` (both canonical) walks, or ``None`` if it
    is no walk step. A step keeps the origin and either keeps the template (the key is
    :func:`url_template`) or extends the referrer's path by segments (the key is
    ``"deeper:/<first segment>/"``)."""
    return _Referrer(referrer).key(url)


class _Referrer:
    """A page's URL split once, for the walk keys of all its links."""

    __slots__ = ("directory", "origin", "rest", "template")

    def __init__(self, url: str) -> None:
        self.origin, self.rest = _split(url)
        self.template: str | None = None
        path = self.rest.partition("?")[0]
        self.directory = path[: path.rfind("/") + 1]

    def key(self, url: str) -> str | None:
        origin = self.origin
        if not url.startswith(origin) or url[len(origin) : len(origin) + 1] != "/":
            return None
        rest = url[len(origin) :]
        if rest == self.rest:
            return None
        if self.template is None:
            self.template = _DIGITS.sub("{n}", self.rest)
        template = _DIGITS.sub("{n}", rest)
        if template == self.template:
            return template
        directory = self.directory
        below = rest.partition("?")[0][len(directory) :]
        if directory != "/" and rest.startswith(directory) and "/" in below:
            # a new segment below the referrer's directory (not a sibling file)
            return "deeper:" + directory[: directory.index("/", 1) + 1]
        return None


def is_walk_step(referrer: str, url: str) -> bool:
    """Whether the link ``referrer`` -> ``url`` is a walk step (see :func:`walk_key`)."""
    return walk_key(referrer, url) is not None


class WalkGuard:
    """Chains of queued URLs and walking counts per (origin, walk key); see the module doc.

    For each page: :meth:`read` its chain, :meth:`check` each link (which reserves a
    walking URL's place in its budget), then :meth:`settle` each admitted link once the
    store said whether it was queued (a place not used is given back). So the budget is
    never exceeded, however many pages are in flight.
    """

    __slots__ = ("_chains", "_config", "_last", "_walkers", "_walking")

    def __init__(self, config: WalkConfig | None = None) -> None:
        self._config = config or WalkConfig()
        self._last: _Referrer | None = None
        self._chains: dict[str, int] = {}
        self._walking: Counter[tuple[str, str]] = Counter()
        # The walking URLs admitted (at most max_walking per key per host): a link back to
        # one of them is no refusal, so its fetched entry is not catalogued over with a
        # skip reason (the store answers "seen").
        self._walkers: set[str] = set()

    def __len__(self) -> int:
        """URLs whose chain is remembered (queued ones with a chain above 0)."""
        return len(self._chains)

    def state(self) -> dict[str, object]:
        """What a resumed crawl needs to keep the walk bounds (JSON-able): the walking
        counts per walk key per host, the walking URLs admitted, and the chains of the
        queued walking URLs. All three are bounded by ``max_walking`` per key per host;
        the chains of shorter steps (most of a site's number-to-number links) are not
        kept, so they restart from 0 after a resume."""
        walk_from = self._config.walk_from
        return {
            "walking": [[origin, key, n] for (origin, key), n in self._walking.items() if n > 0],
            "walkers": sorted(self._walkers),
            "chains": {url: n for url, n in self._chains.items() if n > walk_from},
        }

    def restore(self, state: dict[str, object]) -> None:
        """Take back a :meth:`state` (after a resume; counts add to any made since)."""
        walking = state.get("walking", [])
        walkers = state.get("walkers", [])
        chains = state.get("chains", {})
        assert isinstance(walking, list) and isinstance(walkers, list)
        assert isinstance(chains, dict)
        for origin, key, n in walking:
            self._walking[(str(origin), str(key))] += int(n)
        self._walkers.update(str(url) for url in walkers)
        for url, n in chains.items():
            self._chains.setdefault(str(url), int(n))

    def walking(self, origin: str, key: str) -> int:
        """Walking URLs admitted (or reserved) for the walk key ``key`` on ``origin``."""
        return self._walking[(origin, key)]

    def read(self, referrer: str) -> int:
        """The chain of the page whose links are about to be checked, forgotten now."""
        return self._chains.pop(referrer, 0)

    def check(self, referrer: str, referrer_chain: int, url: str) -> tuple[str | None, int]:
        """``(skip reason or None, chain of url)`` for the link ``referrer`` -> ``url``;
        the reason is ``"template_chain"`` or ``"template_budget"``. An admitted walking
        URL holds a place in its budget until :meth:`settle`."""
        key = self._referrer(referrer).key(url)
        if key is None:
            return None, 0
        chain = referrer_chain + 1
        config = self._config
        if chain > config.walk_from and url in self._walkers:
            return None, 0  # admitted before (a calendar's "previous"): the store says seen
        if chain > config.max_chain:
            return "template_chain", chain
        if chain > config.walk_from:
            budget = (_split(url)[0], key)
            if self._walking[budget] >= config.max_walking:
                return "template_budget", chain
            self._walking[budget] += 1
        return None, chain

    def _referrer(self, url: str) -> _Referrer:
        """The split of ``url``, kept for the next calls (one page's links in a row)."""
        last = self._last
        if last is None or last.origin + last.rest != url:
            last = self._last = _Referrer(url)
        return last

    def settle(self, referrer: str, url: str, chain: int, *, queued: bool) -> None:
        """After the store's answer for an admitted link: remember a queued URL's chain;
        give back the budget place of a walking URL that was not queued (seen, over budget)."""
        if chain <= 0:
            return
        if queued:
            self._chains[url] = chain
            if chain > self._config.walk_from:
                self._walkers.add(url)
        elif chain > self._config.walk_from:
            key = self._referrer(referrer).key(url)
            assert key is not None
            self._walking[(_split(url)[0], key)] -= 1
