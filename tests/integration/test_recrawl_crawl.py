"""A --recrawl crawl of pages changing on a schedule (fake clock), audited from the site's log.

The site (``courtly.sandbox.changing``) answers by the same fake clock the crawl runs on,
so every change time is known: the audit checks politeness, the 304 share of revisits to
unchanged pages, that every change is fetched, that lying validators stop being sent,
and the WARC revisit records.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest
from tests.redis_servers import have_redis_server, new_crawl_name, standalone_url
from tests.stores import DisposableRedisStore
from warcio.archiveiterator import ArchiveIterator

from courtly.clock import FakeClock
from courtly.config import CrawlConfig
from courtly.crawl import Crawler, CrawlSnapshot, Page
from courtly.crawl.wiring import frontier_config, open_store
from courtly.fetch.memory import ConditionalHandler, MemoryFetcher, Reply
from courtly.frontier.config import QueueConfig
from courtly.frontier.revisit import RevisitState
from courtly.sandbox.changing import ChangingPage, ChangingSite, SiteRequest
from courtly.store.base import FrontierStore
from courtly.store.redis import RedisLayout
from courtly.store.redis.address import connect
from courtly.store.revisit_rows import DueBatch, RevisitRow

UA = "courtly/0.1 (+https://courtly.invalid/bot; tests@courtly.invalid)"
ORIGIN = "http://watch.test"
MIN_DELAY_S = 1.0
MIN_S, MAX_S = 5.0, 120.0
RUN_S = 3_000.0
PAGES = (
    ChangingPage("/fast", 30.0),
    ChangingPage("/still", 1e9),
    ChangingPage("/plain", 1e9, "none"),
    ChangingPage("/tags", 1e9, "etag_per_response"),
    ChangingPage("/lmnow", 1e9, "lm_now"),
    ChangingPage("/liar", 400.0, "lying_304"),
    ChangingPage("/ticker", 1e9, "clock_footer"),
)


def recrawl_config(state: Path, **overrides: Any) -> CrawlConfig:
    """The config of these crawls: the origin's home page, 1 s gaps, a memory store,
    revisits every 5-120 s; ``overrides`` replace any field."""
    values: dict[str, Any] = {
        "state_dir": state,
        "user_agent": UA,
        "seeds": (ORIGIN + "/",),
        "min_delay_s": MIN_DELAY_S,
        "delay_factor": 0.0,
        "concurrency": 2,
        "store": "memory",
        "follow_sitemaps": False,
        "progress_interval_s": 60.0,
        "recrawl": True,
        "recrawl_min_interval_s": MIN_S,
        "recrawl_max_interval_s": MAX_S,
    }
    values.update(overrides)
    return CrawlConfig(**values)


def states_of(crawler: Crawler) -> dict[str, RevisitState]:
    """Every recrawl row's state in the crawl's (memory) store, by URL."""
    recrawl = crawler.recrawl
    assert recrawl is not None

    async def read() -> dict[str, RevisitState]:
        return {row.url: row.state async for row in recrawl.rows.revisit_rows()}

    return asyncio.run(read())


def crawl_until(
    config: CrawlConfig,
    clock: FakeClock,
    conditional: ConditionalHandler,
    end_at: float,
    *,
    store: FrontierStore | None = None,
) -> tuple[Crawler, CrawlSnapshot]:
    """Crawl with ``config`` on ``clock`` (and ``store``, if given), every page answered
    by ``conditional``, and stop at the first page that ends at or after ``end_at`` (a
    recrawl never ends by itself)."""
    crawler: Crawler

    def on_page(page: Page) -> None:
        if clock.now() >= end_at:
            crawler.request_stop("max_time")

    fetcher = MemoryFetcher(lambda url: 404, clock, conditional=conditional)
    crawler = Crawler(config, clock=clock, fetcher=fetcher, on_page=on_page, store=store)
    return crawler, asyncio.run(crawler.run())


def run_recrawl(
    state: Path, *, recrawl: bool = True, store: str = "memory", clock: FakeClock | None = None
) -> tuple[ChangingSite, Crawler, float]:
    clock = clock or FakeClock()
    site = ChangingSite(PAGES, clock, start_at=1_700_000_000.0)
    config = recrawl_config(state, store=store, recrawl=recrawl)
    crawler, snapshot = crawl_until(config, clock, site, clock.now() + RUN_S)
    # a recrawl does not end by itself; a plain crawl does
    assert snapshot.stop_reason == ("max_time" if recrawl else "done")
    return site, crawler, site.start_at


def test_a_recrawl_revisits_politely_gets_304s_and_refetches_changes(tmp_path: Path) -> None:
    site, crawler, _ = run_recrawl(tmp_path / "state")
    log = site.log
    by_path: dict[str, list[SiteRequest]] = {}
    for request in log:
        by_path.setdefault(request.url.removeprefix(ORIGIN), []).append(request)

    # Politeness: one host, every request at least the minimum delay after the last.
    times = [r.at for r in log]
    assert all(b - a >= MIN_DELAY_S - 1e-9 for a, b in itertools.pairwise(times))

    # Every page is revisited, never sooner than the floor nor later than the cap + slack.
    for page in PAGES:
        visits = [r.at for r in by_path[page.path]]
        assert len(visits) >= RUN_S / MAX_S / 2, page
        gaps = [b - a for a, b in itertools.pairwise(visits)]
        assert min(gaps) >= MIN_S * 0.95 - 1e-9, page
        # the cap with its jitter, plus the wait for the host's turn (one host, 1 s gaps)
        assert max(gaps) <= MAX_S * 1.05 + len(PAGES) * 2 * MIN_DELAY_S, page

    # Honest validators on an unchanged page: >= 90% of revisits answered 304.
    still = by_path["/still"][1:]
    assert sum(r.status == 304 for r in still) / len(still) >= 0.9

    # Every change of the fast page is fetched (a 200 of that version) before the next one.
    fast = PAGES[0]
    fetched_versions = {site.version(fast, r.at) for r in by_path["/fast"] if r.status == 200}
    last_version = site.version(fast, log[-1].at)
    missed = set(range(last_version)) - fetched_versions
    # A 30 s period against a >= 5 s floor: at most a few versions are skipped.
    assert len(missed) <= last_version // 4, sorted(missed)

    # Lying validators stop being sent.
    assert all("If-None-Match" not in r.headers for r in by_path["/tags"][-10:])
    assert all("If-Modified-Since" not in r.headers for r in by_path["/lmnow"][-10:])
    liar = by_path["/liar"]
    assert any(r.status == 304 for r in liar)  # it lied before it was caught
    assert all("If-None-Match" not in r.headers for r in liar[-5:])

    # Noise in the template is not a change; real changes are counted.
    states = states_of(crawler)
    assert states[ORIGIN + "/ticker"].changes == 0
    assert states[ORIGIN + "/plain"].changes == 0
    assert states[ORIGIN + "/fast"].changes >= len(fetched_versions) - 2


def test_the_warc_holds_both_revisit_profiles(tmp_path: Path) -> None:
    run_recrawl(tmp_path / "state")
    profiles: Counter[str] = Counter()
    for path in sorted((tmp_path / "state" / "warc").glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle, check_digests=True):
                assert not record.digest_checker.problems
                if record.rec_type == "revisit":
                    profiles[record.rec_headers.get_header("WARC-Profile").rsplit("/", 1)[1]] += 1
                    assert record.rec_headers.get_header("WARC-Refers-To")
    assert profiles["server-not-modified"] > 0
    assert profiles["identical-payload-digest"] > 0


def test_a_finished_crawl_resumed_with_recrawl_starts_revisiting_conditionally(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    first, _, _ = run_recrawl(tmp_path / "state", recrawl=False, store="sqlite", clock=clock)
    assert {r.url for r in first.log} >= {ORIGIN + p.path for p in PAGES}
    clock.advance(60.0)
    second, crawler, _ = run_recrawl(tmp_path / "state", store="sqlite", clock=clock)
    still = [r for r in second.log if r.url == ORIGIN + "/still"]
    # its validators came from the catalogue: the very first revisit is conditional
    assert still and still[0].headers.get("If-None-Match") == '"/still-0"'
    assert still[0].status == 304
    assert crawler.recrawl is not None and crawler.recrawl.counts.revisits >= len(PAGES)


def _letters(n: int) -> str:
    """``n`` spelt with the letters a to j (12 -> "bc")."""
    return "".join(chr(ord("a") + int(digit)) for digit in str(n))


def _number(letters: str) -> int:
    return int("".join(str(ord(c) - ord("a")) for c in letters) or 0)


def test_revisits_keep_to_their_share_while_discovery_waits(tmp_path: Path) -> None:
    clock = FakeClock()
    site = ChangingSite((ChangingPage("/fast", 10.0), ChangingPage("/still", 1e9)), clock)
    bulk_pages = 200
    fetched: list[tuple[str, bool]] = []  # (URL, fetched before) of every page request
    seen: set[str] = set()

    def answer(url: str, headers: Mapping[str, str]) -> Reply:
        if not url.endswith("/robots.txt"):
            fetched.append((url, url in seen))
            seen.add(url)
        if url.startswith("http://bulk.test/"):
            if url.endswith("/robots.txt"):
                return 404
            n = _number(url.rsplit("/p", 1)[1]) if "/p" in url else 0
            # letters, not digits: a numbered chain is a template walk, bounded as a trap
            link = f'<a href="/p{_letters(n + 1)}">next</a>' if n + 1 < bulk_pages else ""
            return 200, {"Content-Type": "text/html"}, f"<main>{n}{link}</main>".encode()
        return site(url, headers)

    share = 0.2
    config = recrawl_config(
        tmp_path / "state",
        seeds=(ORIGIN + "/", "http://bulk.test/p" + _letters(0)),
        recrawl_share=share,
    )
    crawler: Crawler

    def on_page(page: Page) -> None:
        if sum(1 for url, _ in fetched if "bulk.test" in url) >= bulk_pages:
            crawler.request_stop("max_time")

    fetcher = MemoryFetcher(lambda url: 404, clock, conditional=answer)
    crawler = Crawler(config, clock=clock, fetcher=fetcher, on_page=on_page)
    asyncio.run(crawler.run())
    revisits = sum(again for _, again in fetched)
    # discovery waited the whole time: revisits at most their share (+1: the first one)
    assert 0 < revisits <= share * len(fetched) + 1, (revisits, len(fetched))


def test_news_pages_get_their_own_lane_below_the_ordinary_floor(tmp_path: Path) -> None:
    clock = FakeClock()
    period = 10.0
    pages = (
        ChangingPage("/hub", period),  # marked by --news
        ChangingPage("/busy", 5.0),  # found by its history
        ChangingPage("/calm", 1e9),
    )
    site = ChangingSite(pages, clock, start_at=clock.now())
    floor = 40.0
    config = recrawl_config(
        tmp_path / "state",
        recrawl_min_interval_s=floor,
        recrawl_max_interval_s=600.0,
        news=(r"/hub$",),
        news_min_interval_s=period / 2,
    )
    crawler, _ = crawl_until(config, clock, site, clock.now() + 3_000.0)
    states = states_of(crawler)
    assert states[ORIGIN + "/hub"].lane == 0 and states[ORIGIN + "/busy"].lane == 0
    assert states[ORIGIN + "/calm"].lane == 1

    times = [r.at for r in site.log]
    assert all(b - a >= MIN_DELAY_S - 1e-9 for a, b in itertools.pairwise(times))  # polite
    hub = [r for r in site.log if r.url.endswith("/hub")]
    gaps = [b.at - a.at for a, b in itertools.pairwise(hub)]
    assert min(gaps) >= period / 2 * 0.95 - 1e-9  # the news floor holds
    assert sorted(gaps)[len(gaps) // 2] < floor  # and is well below the ordinary floor
    # a new version of the hub is fetched within 2 publication intervals (median)
    first_seen: dict[int, float] = {}
    for r in hub:
        if r.status == 200:
            first_seen.setdefault(site.version(pages[0], r.at), r.at)
    lags = sorted(at - site.changed_at(pages[0], v) for v, at in first_seen.items() if v)
    assert lags and lags[len(lags) // 2] <= 2 * period


def crawl_dup_site(tmp_path: Path, bodies: dict[str, str]) -> tuple[Crawler, MemoryFetcher]:
    """A 300 s (fake clock) --recrawl crawl of http://dup.test/, one page at a time, whose
    paths answer ``bodies`` as HTML (any other path: 404)."""
    clock = FakeClock()

    def answer(url: str) -> Reply:
        path = url.removeprefix("http://dup.test")
        if path not in bodies:
            return 404
        return 200, {"Content-Type": "text/html"}, bodies[path].encode()

    config = recrawl_config(tmp_path / "state", seeds=("http://dup.test/",), concurrency=1)
    crawler: Crawler

    def on_page(page: Page) -> None:
        if clock.now() >= clock_start + 300:
            crawler.request_stop("max_time")

    clock_start = clock.now()
    fetcher = MemoryFetcher(answer, clock)
    crawler = Crawler(config, clock=clock, fetcher=fetcher, on_page=on_page)
    asyncio.run(crawler.run())
    return crawler, fetcher


def test_duplicates_across_urls_are_recorded(tmp_path: Path) -> None:
    words = " ".join(f"w{i}" for i in range(300))
    bodies = {
        "/": "<main>" + "".join(f'<a href="/{p}">{p}</a>' for p in "abcd") + "</main>",
        "/a": f"<main>{words} end</main>",
        "/b": f"<main>{words} end</main><footer>another template</footer>",
        "/c": f"<main>{words} fin</main>",
        "/d": "<main>" + " ".join(f"z{i}" for i in range(300)) + "</main>",
    }
    crawler, _ = crawl_dup_site(tmp_path, bodies)
    states = states_of(crawler)
    marked = {u: (states[u].duplicate_of, states[u].near_duplicate_of) for u in states}
    a, b = "http://dup.test/a", "http://dup.test/b"
    # /a and /b share their main text: the one fetched later is an exact duplicate
    assert sorted([marked[a][0] or "", marked[b][0] or ""]) in (["", a], ["", b])
    assert marked[a][0] in (None, b) and marked[b][0] in (None, a)
    assert marked["http://dup.test/c"][0] is None
    assert marked["http://dup.test/c"][1] in {"http://dup.test/a", "http://dup.test/b"}
    assert marked["http://dup.test/d"] == (None, None)


def test_an_exact_duplicates_links_are_not_taken_again(tmp_path: Path) -> None:
    """Two URLs with one main text: the one read second is an exact duplicate, and the link
    only it carries (outside the main text) is neither fetched nor queued."""
    words = " ".join(f"w{i}" for i in range(300))
    bodies = {
        "/": '<main><a href="/a">a</a> <a href="/b">b</a></main>',
        "/a": f'<main>{words}</main><nav><a href="/from-a">more</a></nav>',
        "/b": f'<main>{words}</main><nav><a href="/from-b">more</a></nav>',
        "/from-a": "<main>only a links here</main>",
        "/from-b": "<main>only b links here</main>",
    }
    crawler, fetcher = crawl_dup_site(tmp_path, bodies)
    states = states_of(crawler)
    a, b = "http://dup.test/a", "http://dup.test/b"
    duplicate = a if states[a].duplicate_of == b else b
    original = b if duplicate == a else a
    assert states[duplicate].duplicate_of == original  # one of them is the duplicate
    fetched = set(fetcher.requests)
    assert original.replace("dup.test/", "dup.test/from-") in fetched  # its link was taken
    assert duplicate.replace("dup.test/", "dup.test/from-") not in fetched
    assert duplicate.replace("dup.test/", "dup.test/from-") not in states


def test_an_older_crawls_revisit_blob_moves_into_the_rows(tmp_path: Path) -> None:
    """A state file of version 5 with its revisit book in a blob, resumed with --recrawl:
    the migration adds the rows' table, the crawl moves the book into it and empties the
    blob, and the history carries on (visits counted on, validators sent, and the
    unconditional visits find the page's text unchanged)."""
    import json
    import sqlite3

    from courtly.archive.revisit import payload_digest
    from courtly.parse.fingerprint import simhash64
    from courtly.parse.main_text import main_text_and_title, text_digest
    from courtly.state_dir import STATE_FILE
    from courtly.store.sqlite import SqliteStore

    clock = FakeClock()
    state = tmp_path / "state"
    run_recrawl(state, recrawl=False, store="sqlite", clock=clock)
    still = ORIGIN + "/still"
    # the digests the older crawl stored of /still, which has never changed
    first = FakeClock()
    body = ChangingSite(PAGES, first, start_at=first.now()).answer("/still", {})[2]
    main_text = main_text_and_title(body)[0]
    book = {
        "format": 1,
        "mu": {"0": 1.0, "1": 1.0},
        "states": [
            {
                "url": still,
                "lane": 1,
                "visits": 9,
                "comparisons": 8,
                "changes": 0,
                "unchanged_s": 400.0,
                "changed_ring": [],
                "lm_changes": 0,
                "lm_observed_s": 0.0,
                "validators": {"etag": '"/still-0"', "last_modified": None},
                "status": 200,
                "body_digest": payload_digest(body),
                "text_digest": text_digest(main_text),
                "simhash": simhash64(main_text),
                "content_bytes": len(body),
                "last_fetch_at": clock.now() - 10,
                "last_change_at": None,
                "change_rate_per_s": 0.0,
                "interval_s": MIN_S,
                "floor_streak": 0,
                "next_due_at": clock.now(),
                "warc_record_id": None,
                "warc_date": None,
                "duplicate_of": None,
                "near_duplicate_of": None,
                "depth": 1,
                "out": False,
            }
        ],
    }
    conn = sqlite3.connect(state / STATE_FILE)
    conn.execute("DROP TABLE revisit")  # as version 5 wrote it: no revisit table,
    conn.execute("DROP INDEX back_url")  # no back_url index (version 7)
    conn.execute("ALTER TABLE hosts DROP COLUMN leased")  # nor hosts.leased (version 9)
    conn.execute("PRAGMA user_version = 5")
    conn.execute("INSERT INTO blobs VALUES ('recrawl', 'book', ?)", (json.dumps(book).encode(),))
    conn.commit()
    conn.close()
    clock.advance(60.0)
    second, _, _ = run_recrawl(state, store="sqlite", clock=clock)
    first_still = next(r for r in second.log if r.url == still)
    assert first_still.headers.get("If-None-Match") == '"/still-0"'

    async def read() -> tuple[dict[str, RevisitRow], bytes | None, int]:
        store = SqliteStore(state / STATE_FILE, QueueConfig())
        try:
            rows = await store.revisit_states([(still, "watch.test")])
            return (
                rows,
                await store.get_blob("recrawl", "book"),
                len([r async for r in store.revisit_rows()]),
            )
        finally:
            await store.aclose()

    rows, blob, count = asyncio.run(read())
    assert not blob
    assert count >= len(PAGES)
    revisits = sum(1 for r in second.log if r.url == still)
    assert rows[still].state.visits == 9 + revisits
    assert rows[still].state.changes == 0


def test_the_export_carries_each_urls_recrawl_fields(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from courtly.cli import main as cli_main

    state = tmp_path / "state"
    run_recrawl(state, store="sqlite")
    result = CliRunner().invoke(cli_main, ["export", "--state", str(state)])
    assert result.exit_code == 0, result.output
    lines = {
        line["url"]: line
        for line in map(json.loads, result.stdout.splitlines())
        if line.get("status") is not None
    }
    still, fast = lines[ORIGIN + "/still"]["recrawl"], lines[ORIGIN + "/fast"]["recrawl"]
    assert still["visits"] > 10 and still["changes"] == 0 and still["etag"] == '"/still-0"'
    assert not still["etag_unreliable"] and still["next_due_at"] is not None
    assert fast["changes"] >= 10 and fast["last_change_at"] is not None
    assert fast["changed_intervals_s"] and len(fast["simhash"]) == 16
    assert lines[ORIGIN + "/tags"]["recrawl"]["etag_unreliable"]
    assert lines[ORIGIN + "/lmnow"]["recrawl"]["lm_unreliable"]


def config_and_store(kind: str, state: Path, **overrides: Any) -> tuple[CrawlConfig, FrontierStore]:
    """A recrawl config with a store of ``kind``: memory, SQLite in its state directory,
    or a fresh crawl on the test Redis driven by the caller's (fake) clock."""
    if kind != "redis":
        config = recrawl_config(state, store=kind, **overrides)
        return config, open_store(config, frontier_config(config).queues)
    if not have_redis_server():
        pytest.skip("redis-server is not installed")
    url, name = standalone_url(), new_crawl_name()
    config = recrawl_config(state, store=url, crawl_name=name, **overrides)
    store = DisposableRedisStore(
        connect(url),
        name,
        frontier_config(config).queues,
        layout=RedisLayout(shards=1),
        rng=random.Random(7),
        server_clock=False,
    )
    return config, store


@pytest.mark.parametrize("store", ["memory", "sqlite", "redis"])
def test_a_revisit_retried_after_a_503_is_queued_once_and_fetched_after_its_back_off(
    tmp_path: Path, store: str
) -> None:
    """A revisit answered 503 with a Retry-After longer than its next interval: the
    lease's retry waits in the host's queue for the back-off, and the URL's row is out
    meanwhile, so ``requeue_due`` does not queue the URL a second time; the retry is
    fetched once after the back-off, then the URL no sooner than the floor, and it is
    never queued twice between two fetches."""
    clock = FakeClock()
    site = ChangingSite((ChangingPage("/plain", 1e9, "none"),), clock, start_at=clock.now())
    events: list[tuple[str, float, int]] = []  # ("fetch" or "queued", at, status)
    plain_requests = 0

    def flaky(url: str, headers: Mapping[str, str]) -> tuple[int, list[tuple[str, str]], bytes]:
        nonlocal plain_requests
        if url.endswith("/plain"):
            plain_requests += 1
            if plain_requests == 4:  # the third revisit
                events.append(("fetch", clock.now(), 503))
                return 503, [("Retry-After", "110")], b""
        status, reply_headers, body = site(url, headers)
        if url.endswith("/plain"):
            events.append(("fetch", clock.now(), status))
        return status, reply_headers, body

    # revisits unbounded: the row is queued again as soon as it is due
    config, frontier_store = config_and_store(store, tmp_path / "state", recrawl_share=1.0)
    requeue_due = cast(Any, frontier_store).requeue_due

    async def recording(*args: Any, **kwargs: Any) -> DueBatch:
        batch = cast(DueBatch, await requeue_due(*args, **kwargs))
        events.extend(("queued", clock.now(), 0) for u in batch.queued if u.endswith("/plain"))
        return batch

    setattr(frontier_store, "requeue_due", recording)  # noqa: B010
    crawl_until(config, clock, flaky, clock.now() + 400.0, store=frontier_store)
    fetches = [(at, status) for kind, at, status in events if kind == "fetch"]
    failed = next(at for at, status in fetches if status == 503)
    after = [at for at, _ in fetches if at > failed]
    assert after and after[0] >= failed + 110.0 - 1e-6  # the retry waited for Retry-After
    # after the retry, the next visit keeps to the floor: not a second copy at once
    assert all(b - a >= MIN_S * 0.95 for a, b in itertools.pairwise(after)), after[:4]
    # queued once: not while the retry waited, and at most once between two fetches
    kinds = [kind for kind, _, _ in events]
    failed_at = events.index(("fetch", failed, 503))
    retried_at = kinds.index("fetch", failed_at + 1)
    assert "queued" not in kinds[failed_at:retried_at], events[failed_at:retried_at]
    assert kinds.count("queued") >= 3  # revisits came after the retry
    assert "queued,queued" not in ",".join(kinds), events
