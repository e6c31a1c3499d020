"""Importance learnt while crawling: OPIC cash, in-links and host quality of new URLs.

Adaptive OPIC (Abiteboul, Preda, Cobena, WWW 2003), as Heritrix and BUbiNG use it in
spirit: every page holds *cash*; when its links are read, its cash (plus ``base_cash``,
so that a page nobody has paid yet still passes something on) is split equally among its
distinct followable links, and the page's own cash is spent. A URL linked from many pages,
or from important ones, collects more cash before it is queued. Beside the cash:

* ``inlinks``: links to the URL seen so far (one per referring page);
* host quality: links seen into the URL's host from pages of other hosts (IRLbot's
  STAR counts such links per domain): ``quality_links`` of them give quality 0.5 (one
  level up in :func:`~courtly.frontier.prioritiser.prioritise`), none gives 0.

:meth:`Importance.signals` turns that into the prioritiser's inputs, the cash as a ratio
to the mean cash of the URLs admitted so far (``cash_ratio``: 2 or more lifts a URL one
level, 1/2 or less drops it one). The level is chosen when a URL is admitted; when a
queued URL's next in-link lifts its level, the link carries ``lift`` and the store
promotes it (:meth:`~courtly.store.base.FrontierStore.promote`; see docs/frontier.md).

**Across partitions** (``--processes N``): a URL's tables live with the partition that
owns its host. A page's links to another partition's hosts are split into the page's
cash like any (:meth:`Importance.read` with ``elsewhere``), not credited where the page
was read, and forwarded with their share; the owner credits them
(:meth:`Importance.credit`) and judges the level itself, as if it had read the link.

Memory: one float and one count per URL linked (queued or not) and one count per host, in
the crawl process; the tables are emptied when they hold ``max_urls`` URLs (the estimate
restarts, the crawl goes on). A crawl with a state directory saves the per-host counts
and the admitted mean with its progress (:meth:`Importance.state`,
``courtly.frontier.learnt``); per-URL cash and in-links are learnt again after a resume.
Pure apart from its own tables; no clock, no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Importance", "ImportanceConfig", "ImportanceSignals", "authority_of_canonical"]


@dataclass(frozen=True, slots=True)
class ImportanceConfig:
    """Knobs of :class:`Importance` (cash is unitless)."""

    seed_cash: float = 1.0
    base_cash: float = 0.1
    quality_links: int = 8
    max_urls: int = 2_000_000

    def __post_init__(self) -> None:
        if self.seed_cash < 0 or self.base_cash < 0 or self.quality_links < 1:
            raise ValueError("need seed_cash >= 0, base_cash >= 0, quality_links >= 1")
        if self.max_urls < 1:
            raise ValueError("max_urls must be >= 1")


@dataclass(frozen=True, slots=True)
class ImportanceSignals:
    """What is known of a URL's importance when it is admitted."""

    inlinks: int
    cash_ratio: float
    host_quality: float


class Importance:
    """The tables of the module doc, fed by :meth:`seed` and :meth:`read`."""

    __slots__ = ("_admitted", "_admitted_cash", "_cash", "_config", "_host_links", "_inlinks")

    def __init__(self, config: ImportanceConfig | None = None) -> None:
        self._config = config or ImportanceConfig()
        self._cash: dict[str, float] = {}
        self._inlinks: Counter[str] = Counter()
        self._host_links: Counter[str] = Counter()
        self._admitted = 0
        self._admitted_cash = 0.0

    def __len__(self) -> int:
        """URLs with cash or in-links recorded."""
        return len(self._cash)

    def state(self) -> dict[str, object]:
        """The part kept across a resume (JSON-able): links into each host from other
        hosts (host quality) and the admitted URLs' cash sum and count (the mean).
        Per-URL cash and in-links are not kept: one entry per URL linked, too many for
        a blob, and the stored queue keeps the levels they gave."""
        return {
            "host_links": dict(self._host_links),
            "admitted": self._admitted,
            "admitted_cash": self._admitted_cash,
        }

    def restore(self, state: dict[str, object]) -> None:
        """Take back a :meth:`state` (after a resume; adds to what was learnt since)."""
        host_links = state.get("host_links", {})
        assert isinstance(host_links, dict)
        for host, n in host_links.items():
            self._host_links[str(host)] += int(n)
        admitted = state.get("admitted", 0)
        admitted_cash = state.get("admitted_cash", 0.0)
        assert isinstance(admitted, int) and isinstance(admitted_cash, int | float)
        self._admitted += admitted
        self._admitted_cash += float(admitted_cash)

    def cash(self, url: str) -> float:
        return self._cash.get(url, 0.0)

    def seed(self, url: str) -> None:
        """Give a seed its starting cash."""
        self._cash[url] = self._cash.get(url, 0.0) + self._config.seed_cash

    def rank(self, page: str, links: Sequence[str]) -> list[ImportanceSignals]:
        """:meth:`read` ``page``'s distinct canonical ``links``, then the signals of each
        (hosts are the URLs' authorities)."""
        hosts = [authority_of_canonical(url) for url in links]
        self.read(page, authority_of_canonical(page), list(zip(links, hosts, strict=True)))
        return [self.signals(url, host) for url, host in zip(links, hosts, strict=True)]

    def read(
        self,
        page: str,
        page_host: str,
        links: Sequence[tuple[str, str]],
        elsewhere: Sequence[bool] | None = None,
    ) -> float:
        """Spend ``page``'s cash on its distinct ``links`` (``(url, host)`` pairs); the
        share each link gets (0 if there are none).

        ``elsewhere[i]``: link ``i``'s URL is another partition's (``--processes``): its
        share is counted in the split but not credited here; the caller forwards it
        with the link to the URL's owner, who credits it (:meth:`credit`)."""
        config = self._config
        cash = self._cash.pop(page, 0.0) + config.base_cash
        if not links:
            return 0.0
        if len(self._cash) + len(links) > config.max_urls:
            self._cash.clear()
            self._inlinks.clear()
        share = cash / len(links)
        table, inlinks, host_links = self._cash, self._inlinks, self._host_links
        for i, (url, host) in enumerate(links):
            if elsewhere is not None and elsewhere[i]:
                continue
            table[url] = table.get(url, 0.0) + share
            inlinks[url] += 1
            if host != page_host:
                host_links[host] += 1
        return share

    def credit(self, url: str, host: str, share: float, *, cross_host: bool) -> None:
        """One link to ``url`` read by another partition, with the ``share`` of its page's
        cash that :meth:`read` left for it there (``cross_host``: the page is of another
        host). The same tables as a link read here."""
        if len(self._cash) >= self._config.max_urls:
            self._cash.clear()
            self._inlinks.clear()
        self._cash[url] = self._cash.get(url, 0.0) + share
        self._inlinks[url] += 1
        if cross_host:
            self._host_links[host] += 1

    def signals(self, url: str, host: str) -> ImportanceSignals:
        """The prioritiser's inputs for ``url`` now; counts it as admitted (for the mean)."""
        return ImportanceSignals(*self.admit(url, host))

    def admit(self, url: str, host: str) -> tuple[int, float, float]:
        """:meth:`signals` as a plain ``(inlinks, cash_ratio, host_quality)`` tuple."""
        signals = self.peek(url, host)
        self._admitted += 1
        self._admitted_cash += self._cash.get(url, 0.0)
        return signals

    def peek(self, url: str, host: str) -> tuple[int, float, float]:
        """:meth:`admit` without counting ``url`` as admitted (for a URL queued before)."""
        cash = self._cash.get(url, 0.0)
        mean = self._admitted_cash / self._admitted if self._admitted else cash
        ratio = cash / mean if mean > 0 else 1.0
        quality = min(1.0, 0.5 * self._host_links.get(host, 0) / self._config.quality_links)
        return self._inlinks.get(url, 0), ratio, quality


def authority_of_canonical(url: str) -> str:
    """The authority of a canonical URL (``host[:port]``): the host :meth:`Importance.read`
    and :meth:`Importance.admit` expect."""
    start = url.find("://") + 3
    end = url.find("/", start)
    return url[start:end] if end >= 0 else url[start:]
