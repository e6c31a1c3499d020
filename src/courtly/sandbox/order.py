"""The crawl-order score: did a crawl fetch the most linked pages first?

With ``w_1 ... w_N`` the in-degrees of the pages a crawl fetched, in the order first
fetched, and ``v_1 ... v_N`` the ``N`` largest in-degrees of all pages (descending)::

    score = sum_k (w_1 + ... + w_k) / sum_k (v_1 + ... + v_k)

1 means the most linked pages came first (the best any order can do with N fetches);
a random order scores about the mean in-degree over the mean of the top N. A page's
in-degree is the number of distinct pages of ``pages`` (the ones a correct polite crawl
can fetch, :meth:`~courtly.sandbox.SandboxTruth.expected_pages`) with a followable link
to it, from the generator's model (never from what was served).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from courtly.sandbox.resources import Page
from courtly.sandbox.urls import split_url
from courtly.sandbox.world import SandboxWorld

__all__ = ["in_degrees", "order_score"]


def in_degrees(world: SandboxWorld, pages: Iterable[str]) -> Counter[str]:
    """Canonical URL -> how many distinct pages of ``pages`` link to it (followable links
    of pages that are not nofollow pages; a page's link to itself not counted)."""
    degrees: Counter[str] = Counter()
    for url in pages:
        host, _, path = split_url(url)
        page = world.resolve(host, path)
        if not isinstance(page, Page) or page.meta_nofollow or page.header_nofollow:
            continue
        targets = {
            world.canonical(link.target)
            for link in page.links
            if link.target is not None and not link.nofollow
        }
        targets.discard(url)
        degrees.update(targets)
    return degrees


def order_score(fetched: Iterable[str], degrees: Mapping[str, int]) -> float | None:
    """The score of fetching ``fetched`` (canonical URLs, in order; repeats ignored);
    ``None`` when nothing with an in-degree was fetched."""
    seen: set[str] = set()
    got: list[int] = []
    for url in fetched:
        if url not in seen:
            seen.add(url)
            got.append(degrees.get(url, 0))
    best = sorted(degrees.values(), reverse=True)[: len(got)]
    best += [0] * (len(got) - len(best))
    num = den = 0
    run_got = run_best = 0
    for w, v in zip(got, best, strict=True):
        run_got += w
        run_best += v
        num += run_got
        den += run_best
    return num / den if den else None
