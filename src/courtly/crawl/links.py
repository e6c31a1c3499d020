"""From a response to queue entries: its links, redirect or sitemap entries, admitted or skipped.

For each response (:meth:`LinkAdmission.read`): the links are extracted (HTML; nofollow
honoured), or the ``Location`` of a redirect, or a sitemap's entries; each distinct
canonical URL is checked for scope, traps by shape (:func:`courtly.url.trap_reason`) and
template walks (:class:`courtly.frontier.traps.WalkGuard`); the page's OPIC cash is
spent on the admitted ones (:class:`courtly.frontier.importance.Importance`), and each
admitted URL becomes a queue entry with its level, host key and depth.

**URLs already known.** An admitted URL the store has already answered for in this
process (queued or seen: it is in the store's seen-set, which never forgets) would only
be answered "seen" again, so it gets no queue entry: no importance signals, no priority,
no host key, no store lookup, no forwarding to another partition; and its scope and trap
checks, which read the URL alone and passed when it was queued, are skipped but for its
depth (``too_deep``). Its walk check still runs (its skip reasons and the walk budget are
as before), and it still receives its share of the page's cash and an in-link. What
changes is only what the store would have said again: a known URL is no longer counted
as dropped for the host's budget or a retired host, and the mean cash of admitted URLs
(:meth:`~courtly.frontier.importance.Importance.admit`) is over the URLs queued. The known
set holds at most ``max_known`` URLs and is emptied when full (the store answers "seen"
again meanwhile). A known URL whose in-link just lifted its level does get an entry, with
``lift`` set: the store answers "seen" and moves it up if it is still queued
(:meth:`courtly.store.base.FrontierStore.promote`). The level is computed at the depth
the URL was first queued with (the known set keeps it), not the depth of the new link:
a URL found again one link deeper would otherwise seem no better than it was. A URL
this process has fetched (its response read here) is known as fetched: its in-links still
count, but it gets no entry, since there is nothing left in its queue to move up (a
promotion would be a store lookup that finds nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from courtly.archive.catalogue import CatalogueEntry
from courtly.errors import InvalidURL
from courtly.fetch.records import FetchResult
from courtly.frontier.frontier import Candidate
from courtly.frontier.importance import Importance, authority_of_canonical
from courtly.frontier.prioritiser import INLINKS_STEP, level_of
from courtly.frontier.records import AddStatus, QueuedUrl
from courtly.frontier.traps import WalkGuard
from courtly.parse.links import ElementFinder, extract_links, new_element_finder
from courtly.parse.sitemaps import parse_sitemap
from courtly.robots import RobotsDecision
from courtly.url import (
    JoinCache,
    ParamPolicy,
    Scope,
    TrapConfig,
    UrlJoiner,
    canonicalize,
    hostname_of,
)
from courtly.url import trap_reason as _trap_reason

__all__ = ["MAX_REDIRECT_HOPS", "MAX_SITEMAPS", "LinkAdmission", "PageFacts"]

REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_SITEMAPS = 1_000
"""Most sitemap URLs one crawl process follows (robots.txt ``Sitemap:`` lines, indexes)."""
_FETCHED = -1
"""The known set's depth of a URL fetched here (depths are >= 0): never lifted again."""
MAX_REDIRECT_HOPS = 5
"""Hops of a redirect chain that are not link hops (as Heritrix counts them apart): the
target of a redirect is at its source's depth, so ``--max-depth N`` reaches a page
whose link at depth N answers ``http -> https``. And a seed's redirect targets are
seeds (Heritrix's "seeds redirect new seeds", kept to the seed's registered domain, or
an ``any`` scope): a crawl of ``http://example.org/`` that answers with
``https://www.example.org/`` starts there, within a ``host`` scope too; a target on
another registered domain joins no scope (a seed sent to a single sign-on page would
otherwise bring in the provider's whole domain). Past that many hops of one chain (as
one process saw it), a redirect counts as a link hop."""


@dataclass(frozen=True, slots=True)
class PageFacts:
    """What one response tells the crawl (see :meth:`LinkAdmission.read`)."""

    links: tuple[str, ...]
    """Every distinct canonical link followed (before scope checks)."""
    queued: list[QueuedUrl]
    """Entries for the admitted URLs not known to be seen (see the module doc), and for
    known ones whose new in-link lifted their level (``lift`` set: the store promotes them)."""
    skipped: list[CatalogueEntry]
    skip_reasons: list[str]
    """One reason per URL skipped (or ``page_nofollow``/``page_duplicate`` for the page),
    for the counters."""
    redirect_to: str | None
    title: str | None
    noindex: bool
    canonical: str | None
    chains: dict[str, int]
    """The walk chain of each admitted link that is a walk step (``courtly.frontier.traps``)."""
    forwarded: list[QueuedUrl] = field(default_factory=list)
    """In a partitioned crawl (:attr:`LinkAdmission.owns` set): an entry for every admitted
    link to another partition's host, known or not (each is an in-link its owner counts),
    at the depth the URL was first queued with when it is known here; not in ``queued``."""
    forwarded_cash: list[float] = field(default_factory=list)
    """The share of the page's OPIC cash each ``forwarded`` link carries to its owner."""
    seed: str | None = None
    """The redirect target of a seed (or of a seed's target, up to
    :data:`MAX_REDIRECT_HOPS` hops) whose site just joined the scope: a seed itself, for
    the caller to store with the crawl's seeds."""


class LinkAdmission:
    """The link checks and tables of one crawl process (see the module doc).

    ``host_key`` is the frontier's politeness unit of a canonical URL; ``levels`` its
    number of front-queue levels. ``scope`` is set once the seeds are known.
    """

    def __init__(
        self,
        *,
        params: ParamPolicy,
        host_key: Callable[[str], str],
        levels: int,
        robots_token: str,
        max_known: int = 2_000_000,
    ) -> None:
        self.scope: Scope | None = None
        self.owns: Callable[[str], bool] | None = None
        """Set in a partitioned crawl: does this process own a host key? (see :meth:`credit`)"""
        self.importance = Importance()  # OPIC cash, in-links, host quality of new URLs
        self.walks = WalkGuard()  # link chains walking one URL template (calendars...)
        self.sitemaps: set[str] = set()
        self._params = params  # tracking parameters dropped from every URL
        self._join_cache = JoinCache(params=params)  # sibling pages repeat their hrefs
        self._finder: ElementFinder | None = None  # made on first use, kept for every page
        self._traps = TrapConfig()
        self._host_key = host_key
        self._levels = levels
        self._token = robots_token
        self._known: dict[str, int] = {}  # URL -> depth it was first queued with, or _FETCHED
        self._max_known = max_known
        self._redirect_hops: dict[str, int] = {}  # a redirect target not yet read -> hops

    # -- the seen-set, as far as this process knows it ---------------------------------

    def _room(self, wanted: int) -> dict[str, int]:
        """The known set, emptied first if ``wanted`` more URLs would not fit."""
        known = self._known
        if len(known) + wanted > self._max_known:
            known.clear()
        return known

    def note(self, entries: Sequence[QueuedUrl], statuses: Sequence[AddStatus]) -> None:
        """Remember the entries the store queued or found seen (see the module doc)."""
        known = self._room(len(entries))
        for entry, status in zip(entries, statuses, strict=False):
            if status <= AddStatus.SEEN:  # QUEUED or SEEN: in the seen-set for good
                known.setdefault(entry.url, entry.depth)

    def note_forwarded(self, entries: Sequence[QueuedUrl]) -> None:
        """Remember entries handed (durably) to the partition that owns them."""
        known = self._room(len(entries))
        for entry in entries:
            known.setdefault(entry.url, entry.depth)

    # -- a response ----------------------------------------------------------------------

    def read(
        self, page_url: str, depth: int, result: FetchResult, *, follow: bool = True
    ) -> PageFacts:
        """What a response says: its links (to queue or skipped, with why), redirect, title.

        ``page_url`` is the lease's canonical URL, ``depth`` its depth. ``follow=False``
        (an exact duplicate of a page already read) keeps the title, canonical and noindex
        but takes none of its links: the original's were taken (reason ``page_duplicate``)."""
        joiner = UrlJoiner(page_url, canonical=True, cache=self._join_cache, params=self._params)
        known = self._room(1)
        known[page_url] = _FETCHED  # its queue entry is gone: no promotion can move it
        urls: list[str] = []
        reasons: list[str] = []
        redirect_to: str | None = None
        title: str | None = None
        canonical: str | None = None
        noindex = False
        status = result.status
        seed: str | None = None
        link_depth = depth + 1
        if status in REDIRECTS:
            location = result.header("Location")
            target = joiner.join(location) if location else None
            if target is not None:
                redirect_to = target
                urls.append(target)
                link_depth, seed = self._redirected(page_url, target, depth)
        elif 200 <= status < 300:
            if page_url in self.sitemaps or looks_like_sitemap(result):
                self._sitemap_urls(result, joiner, urls)
            else:
                page = extract_links(
                    result.body,
                    page_url,
                    content_type=result.header("Content-Type"),
                    x_robots_tag=[v for k, v in result.headers if k.lower() == "x-robots-tag"],
                    join=joiner.join,
                    robots_token=self._token,
                    finder=self._element_finder(),
                )
                title = page.title
                noindex = page.noindex
                canonical = page.canonical
                if not follow:
                    reasons.append("page_duplicate")
                elif page.nofollow:
                    reasons.append("page_nofollow")
                if follow:
                    urls.extend(link.url for link in page.followable())
        links = tuple(dict.fromkeys(urls))
        forwarded: list[QueuedUrl] = []
        cash: list[float] = []
        queued, skipped, chains = self._admit(page_url, link_depth, links, reasons, forwarded, cash)
        return PageFacts(
            links,
            queued,
            skipped,
            reasons,
            redirect_to,
            title,
            noindex,
            canonical,
            chains,
            forwarded,
            cash,
            seed,
        )

    def _redirected(self, page_url: str, target: str, depth: int) -> tuple[int, str | None]:
        """The depth ``target``, the redirect target of ``page_url`` (at ``depth``), is
        queued at, and the target again if it is a seed (see :data:`MAX_REDIRECT_HOPS`)."""
        hops = self._redirect_hops.pop(page_url, 0) + 1  # read once: the page is fetched
        if len(self._redirect_hops) >= self._max_known:
            self._redirect_hops.clear()
        self._redirect_hops[target] = hops
        if hops > MAX_REDIRECT_HOPS:
            return depth + 1, None
        return depth, self._seed_redirect(page_url, target) if depth == 0 else None

    def _seed_redirect(self, page_url: str, target: str) -> str | None:
        """``target`` if the seed ``page_url``'s redirect to it adds its site to the scope
        (see :data:`MAX_REDIRECT_HOPS`); else ``None``."""
        scope = self.scope
        if scope is None or _trap_reason(target, self._traps):
            return None
        try:
            domain = scope.resolver.registered_domain
            if domain(hostname_of(target)) != domain(hostname_of(page_url)):
                return None  # another domain: in the scope only if it was already
            widened = scope.with_seed(target)  # www., another host of the seed's domain
        except InvalidURL:
            return None
        if widened is scope:
            return None  # in the scope already: nothing to store
        self.scope = widened
        return target

    def _element_finder(self) -> ElementFinder:
        finder = self._finder
        if finder is None:
            finder = self._finder = new_element_finder()
        return finder

    def _sitemap_urls(self, result: FetchResult, joiner: UrlJoiner, urls: list[str]) -> None:
        sitemap = parse_sitemap(result.body)
        for item in sitemap.urls:
            if (url := joiner.join(item.loc)) is not None:
                urls.append(url)
        for child in sitemap.sitemaps:
            if (url := joiner.join(child)) is not None and len(self.sitemaps) < MAX_SITEMAPS:
                self.sitemaps.add(url)
                urls.append(url)

    def _admit(
        self,
        page_url: str,
        depth: int,
        links: Sequence[str],
        reasons: list[str],
        forwarded: list[QueuedUrl],
        cash: list[float],
    ) -> tuple[list[QueuedUrl], list[CatalogueEntry], dict[str, int]]:
        """Check each distinct link; entries for the admitted ones not known already (and,
        with :attr:`owns` set, every admitted link to another partition's host in
        ``forwarded``, its share of the page's cash in ``cash``)."""
        scope = self.scope
        assert scope is not None
        check, traps, trap_reason = scope.check, self._traps, _trap_reason
        # A known URL passed the scope and trap checks before (they read the URL alone),
        # but for its depth.
        too_deep = "too_deep" if scope.max_depth is not None and depth > scope.max_depth else None
        walks, known = self.walks, self._known
        skipped: list[CatalogueEntry] = []
        chains: dict[str, int] = {}
        admitted: list[str] = []
        fresh: list[bool] = []
        referrer_chain = walks.read(page_url)
        for url in links:
            is_new = url not in known
            reason = (check(url, depth) or trap_reason(url, traps)) if is_new else too_deep
            if reason is None:
                reason, chain = walks.check(page_url, referrer_chain, url)
                if reason is None and chain:
                    chains[url] = chain
            if reason is not None:
                reasons.append(reason)
                skipped.append(
                    CatalogueEntry(url, depth=depth, referrer=page_url, skip_reason=reason)
                )
                continue
            admitted.append(url)
            fresh.append(is_new)
        queued: list[QueuedUrl] = []
        importance = self.importance
        if not admitted:
            importance.read(page_url, authority_of_canonical(page_url), ())
            return queued, skipped, chains
        hosts = [authority_of_canonical(url) for url in admitted]
        pairs = list(zip(admitted, hosts, strict=True))
        if self.owns is not None:
            pairs, fresh = self._split_off(page_url, depth, pairs, fresh, forwarded, cash)
        else:
            importance.read(page_url, authority_of_canonical(page_url), pairs)
        admit, host_key, levels = importance.admit, self._host_key, self._levels
        for (url, host), is_new in zip(pairs, fresh, strict=True):
            if not is_new:
                if (lifted := self._lifted(url, host, known.get(url, depth))) is not None:
                    queued.append(lifted)
                continue
            inlinks, cash_ratio, quality = admit(url, host)
            try:
                key = host_key(url)
            except InvalidURL:
                reasons.append("invalid")
                continue
            level = level_of(depth, inlinks, quality, cash_ratio, levels)
            queued.append(QueuedUrl(url, key, level, depth))
        return queued, skipped, chains

    def _split_off(
        self,
        page_url: str,
        depth: int,
        pairs: list[tuple[str, str]],
        fresh: list[bool],
        forwarded: list[QueuedUrl],
        cash: list[float],
    ) -> tuple[list[tuple[str, str]], list[bool]]:
        """Spend the page's cash over all its admitted links, crediting here only those this
        partition owns; the others go to ``forwarded`` with their share. The pairs and
        flags left are this partition's."""
        owns, host_key, known = self.owns, self._host_key, self._known
        assert owns is not None
        elsewhere: list[bool] = []
        keys: list[str | None] = []
        for url, _ in pairs:
            try:
                key: str | None = host_key(url)
            except InvalidURL:
                key = None  # judged below as a link of this partition: "invalid"
            keys.append(key)
            elsewhere.append(key is not None and not owns(key))
        if not any(elsewhere):
            self.importance.read(page_url, authority_of_canonical(page_url), pairs)
            return pairs, fresh
        share = self.importance.read(page_url, authority_of_canonical(page_url), pairs, elsewhere)
        base = level_of(depth, 0, 0.0, 1.0, self._levels)  # the owner judges the level
        mine: list[tuple[str, str]] = []
        mine_fresh: list[bool] = []
        for pair, is_new, key, away in zip(pairs, fresh, keys, elsewhere, strict=True):
            if away:
                assert key is not None
                url = pair[0]
                first = known.get(url, depth)  # (another partition's URL: never fetched here)
                forwarded.append(QueuedUrl(url, key, base, depth if first < 0 else first))
                cash.append(share)
            else:
                mine.append(pair)
                mine_fresh.append(is_new)
        return mine, mine_fresh

    # -- links another partition read ------------------------------------------------------

    def credit(
        self,
        entries: Sequence[QueuedUrl],
        referrers: Sequence[str | None],
        cash: Sequence[float | None],
    ) -> tuple[list[QueuedUrl], list[str | None]]:
        """Links to this partition's URLs that another partition read (each with its page and
        its share of that page's cash, ``None`` for a line written without one): credit
        each to the importance tables as if the link were read here, then the entries to
        offer the store, with their referrers: a URL not known here at the level judged
        now (its in-links and cash from every partition), a known one only if this link
        lifted its level (``lift`` set), at the depth it was first queued with.

        The sender checked scope, traps and walks; an entry without cash (a sitemap's, or
        a line of an older version) is offered as it came."""
        importance, known, levels = self.importance, self._known, self._levels
        offers: list[QueuedUrl] = []
        offer_referrers: list[str | None] = []
        for entry, referrer, share in zip(entries, referrers, cash, strict=True):
            if share is None or referrer is None:
                offers.append(entry)
                offer_referrers.append(referrer)
                continue
            url = entry.url
            host = authority_of_canonical(url)
            cross = authority_of_canonical(referrer) != host
            importance.credit(url, host, share, cross_host=cross)
            depth = known.get(url)
            if depth is not None:
                if (lifted := self._lifted(url, host, depth)) is not None:
                    offers.append(lifted)
                    offer_referrers.append(referrer)
                continue
            inlinks, cash_ratio, quality = importance.admit(url, host)
            level = level_of(entry.depth, inlinks, quality, cash_ratio, levels)
            offers.append(replace(entry, level=level))
            offer_referrers.append(referrer)
        return offers, offer_referrers

    def _lifted(self, url: str, host: str, depth: int) -> QueuedUrl | None:
        """An entry for a known URL whose in-link just counted lifted its level (the store
        answers it "seen" and promotes it if it is still queued), else ``None``.

        Only an in-link count at a multiple of the in-link step can change the level, so
        most known links cost one dictionary lookup here; a URL fetched here (``depth``
        :data:`_FETCHED`) is never lifted."""
        if depth < 0:
            return None
        inlinks, cash_ratio, quality = self.importance.peek(url, host)
        if inlinks < 1 or inlinks % INLINKS_STEP:
            return None
        levels = self._levels
        level = level_of(depth, inlinks, quality, cash_ratio, levels)
        if level >= level_of(depth, inlinks - 1, quality, cash_ratio, levels):
            return None
        try:
            return QueuedUrl(url, self._host_key(url), level, depth, True)
        except InvalidURL:
            return None

    def settle_walks(
        self,
        referrer: str,
        chains: dict[str, int],
        discovered: Sequence[QueuedUrl],
        statuses: Sequence[AddStatus] | None,
    ) -> None:
        """Tell the walk guard which of the walk steps found on ``referrer`` were queued."""
        queued = {
            entry.url
            for entry, status in zip(discovered, statuses or (), strict=False)
            if status is AddStatus.QUEUED
        }
        for url, chain in chains.items():
            self.walks.settle(referrer, url, chain, queued=url in queued)

    def sitemap_candidates(self, decision: RobotsDecision) -> list[Candidate]:
        """The robots.txt ``Sitemap:`` URLs to queue (in scope, new; see :data:`MAX_SITEMAPS`)."""
        assert self.scope is not None
        candidates: list[Candidate] = []
        for raw in decision.sitemaps:
            if len(self.sitemaps) >= MAX_SITEMAPS:
                break
            try:
                url = canonicalize(raw, params=self._params)
            except InvalidURL:
                continue
            if self.scope.check(url, 0) is not None or url in self.sitemaps:
                continue
            self.sitemaps.add(url)
            candidates.append(Candidate(url, depth=1))
        return candidates


def looks_like_sitemap(result: FetchResult) -> bool:
    """A 2xx body that is gzip, or XML with a ``<urlset>`` or ``<sitemapindex>`` near the top."""
    head = result.body[:512].lstrip()
    if head.startswith(b"\x1f\x8b"):
        return True
    content_type = (result.header("Content-Type") or "").lower()
    if "xml" not in content_type:
        return False
    return b"<urlset" in result.body[:2048] or b"<sitemapindex" in result.body[:2048]
