"""Link admission: lifts of known URLs, and the links a partition forwards with their cash."""

from __future__ import annotations

from courtly.crawl.links import MAX_REDIRECT_HOPS, LinkAdmission
from courtly.fetch.records import FetchResult
from courtly.frontier.records import AddStatus, QueuedUrl
from courtly.url import DEFAULT_PARAMS, Scope


def _page(url: str, hrefs: list[str]) -> FetchResult:
    body = "".join(f'<a href="{h}">x</a>' for h in hrefs).encode()
    headers = (("Content-Type", "text/html"),)
    return FetchResult(url, 200, headers, b"<html><body>" + body + b"</body></html>", 0.0, 0.0)


def _reader(scope: Scope) -> LinkAdmission:
    """A process's link admission with ``scope`` (host keys: the authority)."""
    links = LinkAdmission(
        params=DEFAULT_PARAMS,
        host_key=lambda url: url.split("/")[2],
        levels=4,
        robots_token="courtly",
    )
    links.scope = scope
    return links


def test_a_lift_is_judged_at_the_depth_the_url_was_queued_with() -> None:
    links = _reader(Scope.from_seeds(["http://a.test/"], "any"))
    front = links.read("http://a.test/", 0, _page("http://a.test/", ["/t", "/p0", "/p1", "/p2"]))
    links.note(front.queued, [AddStatus.QUEUED] * len(front.queued))
    target = next(entry for entry in front.queued if entry.url == "http://a.test/t")
    assert target.depth == 1
    lifts = []
    for i in range(3):  # three pages one link deeper: the target's 2nd, 3rd, 4th in-links
        page = f"http://a.test/p{i}"
        facts = links.read(page, 1, _page(page, ["/t"]))
        lifts += [entry for entry in facts.queued if entry.url == target.url]
    # the 4th in-link lifts it above where it was queued (judged at depth 1, not 2; its
    # cash, all these pages' own, counts too): the store can move it up
    assert [(entry.lift, entry.depth) for entry in lifts] == [(True, 1)]
    assert lifts[0].level < target.level


def test_a_url_fetched_here_is_never_lifted_again() -> None:
    """Its queue entry is gone once it is fetched: a lift would only cost a store lookup."""

    def lifts_of(fetch_target: bool) -> list[QueuedUrl]:
        links = _admission()
        front = links.read("http://a.test/", 0, _page("http://a.test/", ["/t", "/p0", "/p1"]))
        links.note(front.queued, [AddStatus.QUEUED] * len(front.queued))
        if fetch_target:
            links.read("http://a.test/t", 1, _page("http://a.test/t", []))
        found: list[QueuedUrl] = []
        for i in range(2):  # the target's 2nd and 3rd in-links, and p_i's own
            page = f"http://a.test/p{i}"
            facts = links.read(page, 1, _page(page, ["/t", "/"]))
            found += [e for e in facts.queued if e.url in ("http://a.test/t", "http://a.test/")]
        return found

    # queued, not fetched: the target's 2nd in-link lifts it (the control)
    assert [e.url for e in lifts_of(fetch_target=False)] == ["http://a.test/t"]
    # fetched here (as the front page was, whose in-links also cross the step): no entry
    assert lifts_of(fetch_target=True) == []


def _admission(owns: str | None = None) -> LinkAdmission:
    links = _reader(Scope.from_seeds(["http://a.test/"], "any"))
    if owns is not None:
        links.owns = lambda key: key == owns
    return links


def test_a_partition_forwards_every_link_to_another_partitions_host_with_its_cash() -> None:
    """Partition A (a.test) reads pages linking to b.test; B credits what A forwards. B's
    tables for b.test's URLs then hold what one crawl reading every page would hold."""
    whole, part_a, part_b = _admission(), _admission("a.test"), _admission("b.test")
    targets = ["http://b.test/t", "http://b.test/u"]
    pages = [("http://a.test/", 0, ["/p0", "/p1", "/p2", *targets])] + [
        (f"http://a.test/p{i}", 1, ["/", "http://b.test/t"]) for i in range(3)
    ]
    whole_b: list[tuple[str, int, bool]] = []
    offered_b: list[tuple[str, int, bool]] = []
    for page, depth, hrefs in pages:
        facts = whole.read(page, depth, _page(page, hrefs))
        whole.note(facts.queued, [AddStatus.QUEUED] * len(facts.queued))
        whole_b += [(e.url, e.depth, e.lift) for e in facts.queued if e.host_key == "b.test"]
        facts_a = part_a.read(page, depth, _page(page, hrefs))
        assert all(e.host_key == "a.test" for e in facts_a.queued)
        # every link to b.test goes to its owner, known there or not, with a share each
        assert sorted(e.url for e in facts_a.forwarded) == sorted(
            u for u in facts.links if u.startswith("http://b.test/")
        )
        assert len(facts_a.forwarded_cash) == len(facts_a.forwarded)
        part_a.note(facts_a.queued, [AddStatus.QUEUED] * len(facts_a.queued))
        part_a.note_forwarded(facts_a.forwarded)
        referrers: list[str | None] = [page] * len(facts_a.forwarded)
        offers, _ = part_b.credit(facts_a.forwarded, referrers, facts_a.forwarded_cash)
        part_b.note(offers, [AddStatus.QUEUED] * len(offers))
        offered_b += [(e.url, e.depth, e.lift) for e in offers]
    for url in targets:
        assert part_b.importance.peek(url, "b.test")[0] == whole.importance.peek(url, "b.test")[0]
        assert part_b.importance.cash(url) == whole.importance.cash(url) > 0
        assert part_a.importance.peek(url, "b.test")[0] == 0  # not counted where read
    # host quality: links into b.test from other hosts, counted by b.test's owner
    assert (
        part_b.importance.peek(targets[0], "b.test")[2]
        == (whole.importance.peek(targets[0], "b.test")[2])
    )
    # the same URLs offered, and the same lifts (t's 2nd and 4th in-links), at the same depths
    assert offered_b == whole_b
    assert [lift for _, _, lift in offered_b].count(True) >= 1


def test_credit_offers_entries_without_cash_as_they_came() -> None:
    part_b = _admission("b.test")
    entry = QueuedUrl("http://b.test/sitemap.xml", "b.test", 1, 1)
    offers, referrers = part_b.credit([entry], [None], [None])
    assert (offers, referrers) == ([entry], [None])
    assert part_b.importance.peek(entry.url, "b.test")[0] == 0


def _redirect(url: str, location: str) -> FetchResult:
    return FetchResult(url, 301, (("Location", location),), b"", 0.0, 0.0)


def test_a_seeds_redirect_target_is_a_seed_for_a_few_hops() -> None:
    """Within a host scope, a seed answering with another host's URL makes that URL a seed
    (depth 0, its host in scope), and so on down the chain for MAX_REDIRECT_HOPS hops;
    a redirect from a page below the seeds is a link like any other."""
    links = _reader(Scope.from_seeds(["http://a.test/"], "host"))
    page, depth = "http://a.test/", 0
    for hop in range(1, MAX_REDIRECT_HOPS + 2):
        target = f"http://h{hop}.a.test/"
        facts = links.read(page, depth, _redirect(page, target))
        if hop <= MAX_REDIRECT_HOPS:
            assert facts.seed == target and [(e.url, e.depth) for e in facts.queued] == [
                (target, 0)
            ]
        else:  # one hop too many: out of the host scope, as any link
            assert (
                facts.seed is None and facts.queued == [] and facts.skip_reasons == ["out_of_scope"]
            )
        page = target
    deep = links.read("http://a.test/x", 1, _redirect("http://a.test/x", "http://z.test/"))
    assert deep.seed is None and deep.skip_reasons == ["out_of_scope"]


def test_a_seeds_redirect_to_another_domain_joins_no_scope() -> None:
    """A seed sent to another registered domain (a sign-on page, say) does not bring that
    domain in; in an ``any`` scope the target is queued at the seed's depth, 0."""
    for mode in ("domain", "host", "any"):
        links = _reader(Scope.from_seeds(["http://a.test/"], mode))
        facts = links.read(
            "http://a.test/", 0, _redirect("http://a.test/", "http://sso.other.test/")
        )
        assert facts.seed is None, mode  # no scope widened, nothing to store
        if mode != "any":
            assert facts.queued == [] and facts.skip_reasons == ["out_of_scope"]
            scope = links.scope
            assert scope is not None and scope.check("http://sso.other.test/", 0) == "out_of_scope"
        else:  # at the seed's depth: fetched at --max-depth 0 too
            assert [(e.url, e.depth) for e in facts.queued] == [("http://sso.other.test/", 0)]


def test_a_redirect_is_not_a_link_hop_for_a_few_hops() -> None:
    """A page's redirect target is at the page's depth (``--max-depth`` counts links), for
    MAX_REDIRECT_HOPS hops of a chain; past them each hop counts as a link."""
    links = _reader(Scope.from_seeds(["http://a.test/"], "host", max_depth=2))
    page = "http://a.test/old"
    depths = []
    for hop in range(1, MAX_REDIRECT_HOPS + 3):
        target = f"http://a.test/r{hop}"
        facts = links.read(page, 2, _redirect(page, target))
        assert facts.seed is None  # only a seed's targets are seeds
        depths.append([entry.depth for entry in facts.queued])
        page = target
    # within the hops, at depth 2 (in --max-depth 2); then one deeper each: too deep
    assert depths == [[2]] * MAX_REDIRECT_HOPS + [[], []]
