"""The crawl: frontier + robots.txt + fetcher + parser + archive, wired in one place.

Data flow of one lease (see docs/architecture.md for the whole picture):

1. the dispatcher leases the earliest ready hosts, up to the fetcher count (autoscaled,
   :mod:`courtly.autoscale`), one request in flight per host, a task per lease
   (:mod:`courtly.crawl.dispatch`, :class:`Crawler`);
2. if the host's robots.txt is unknown or stale, *that* lease fetches it (it
   counts against the host's politeness), the decision is cached, and the URL is
   released back to the head of its queue (:mod:`courtly.crawl.robots_gate`);
3. a URL robots.txt disallows completes with no request (catalogue: ``robots``);
   while robots.txt is unreachable the host is held back, its URLs kept;
4. otherwise the page is fetched (one GET, no redirects followed), archived to
   WARC, parsed for links (HTML only; nofollow honoured) or sitemap entries;
   redirects become new URLs; every new URL is canonicalised, scoped, trap-checked
   (:mod:`courtly.crawl.page`, :mod:`courtly.crawl.links`);
5. ``complete`` stores, atomically, the host's new politeness state, the
   discovered URLs and the catalogue entries; the host re-enters the ready heap
   at end of response + politeness delay.

What happens is published on the crawl's events bus (:mod:`courtly.events`); the
run's counters (:class:`CrawlStats`) are one of its subscribers.

:func:`build_crawler` is the one wiring function; :class:`Crawler` owns no
globals and takes its clock, store and fetcher as arguments (tests inject fakes).
"""

from courtly.crawl.crawler import STATUS_FILE, Crawler, build_crawler
from courtly.crawl.records import CrawlSnapshot, OnPage, Page, Partition, ProgressSink
from courtly.crawl.stats import CrawlStats
from courtly.crawl.wiring import frontier_config, open_store

__all__ = [
    "STATUS_FILE",
    "CrawlSnapshot",
    "CrawlStats",
    "Crawler",
    "OnPage",
    "Page",
    "Partition",
    "ProgressSink",
    "build_crawler",
    "frontier_config",
    "open_store",
]
